"""Parsers for message shapes shared by several conventions.

- the OTel >=1.37 "parts" shape (also TL >=0.55, ADK schema 2, PAI, Strands latest mode);
- OpenAI chat messages ({role, content, tool_calls:[{id, function:{name, arguments}}]});
- Gemini / ADK contents ({role, parts:[{text} | {function_call} | {function_response}]}),
  camelCase or snake_case;
- Bedrock-Converse content blocks (Strands).
"""

from __future__ import annotations

from typing import Any

from ..jsonutil import as_text, parse_json, try_parse_json
from ..messages import (
    AssistantMessage,
    LLMOutput,
    Message,
    SystemMessage,
    ToolCall,
    ToolDefinition,
    ToolMessage,
    make_message,
    normalize_role,
)


def tool_arguments(value: Any) -> tuple[Any, str | None]:
    """Arguments as parsed JSON when possible (double encoding undone), else (raw string, error)."""
    if not isinstance(value, str):
        return value, None
    parsed, error = try_parse_json(value)
    if error is None and isinstance(parsed, str):
        again, again_error = try_parse_json(parsed)
        if again_error is None and isinstance(again, (dict, list)):
            return again, None
    return parsed, error


def make_tool_call(name: Any, arguments: Any, call_id: Any = None) -> ToolCall:
    parsed, error = tool_arguments(arguments)
    return ToolCall(
        name=str(name or ""),
        arguments=parsed,
        id=str(call_id) if call_id not in (None, "") else None,
        arguments_error=error,
    )


def content_text(content: Any) -> str:
    """Text from a content value: a string, a list of parts/blocks, or a dict with text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [content_text(item) for item in content]
        return "\n".join(t for t in texts if t)
    if isinstance(content, dict):
        kind = content.get("type")
        if kind in ("tool_call", "tool_call_response", "tool-call", "tool-result", "function_call"):
            return ""
        for key in ("text", "content", "refusal"):
            if key in content and not isinstance(content[key], (dict, list)):
                return as_text(content[key]) or ""
        if "text" in content or "content" in content:
            return content_text(content.get("text") or content.get("content"))
        return ""
    return str(content)


# --- OTel parts -------------------------------------------------------------------------------


def parse_parts_messages(value: Any) -> list[Message] | None:
    """`gen_ai.input.messages` (JSON string or structured) to typed messages."""
    value = parse_json(value)
    if not isinstance(value, list):
        return None
    messages: list[Message] = []
    for item in value:
        if isinstance(item, dict):
            messages.extend(_parts_message(item))
    return messages


def _parts_message(item: dict) -> list[Message]:
    role = normalize_role(item.get("role"))
    parts = item.get("parts")
    if not isinstance(parts, list):
        parts = [{"type": "text", "content": item.get("content")}] if item.get("content") else []
    texts: list[str] = []
    calls: list[ToolCall] = []
    results: list[ToolMessage] = []
    for part in parts:
        if not isinstance(part, dict):
            if isinstance(part, str):
                texts.append(part)
            continue
        kind = part.get("type")
        if kind == "tool_call":
            calls.append(make_tool_call(part.get("name"), part.get("arguments"), part.get("id")))
        elif kind == "tool_call_response":
            results.append(
                ToolMessage(
                    # Pydantic AI names the field `result` where the OTel shape says `response`.
                    content=as_text(part["response"] if "response" in part else part.get("result")) or "",
                    tool_call_id=part.get("id") if isinstance(part.get("id"), str) else None,
                    name=part.get("name") if isinstance(part.get("name"), str) else None,
                )
            )
        elif kind in (None, "text", "refusal"):
            content = part.get("content")
            # The common part, {"type": "text", "content": "..."}, is its own text (as content_text would read it).
            text = content if type(content) is str and "text" not in part else content_text(part)
            if text:
                texts.append(text)
    text = "\n".join(texts)
    if results:
        out: list[Message] = [make_message(role, text)] if text and role != "tool" else []
        return out + results
    if role == "tool":
        return [ToolMessage(content=text, name=item.get("name") if isinstance(item.get("name"), str) else None)]
    return [make_message(role, text, tool_calls=calls)]


def parse_parts_output(value: Any, finish_reasons: list[str] | None = None) -> LLMOutput | None:
    """`gen_ai.output.messages` to the response text, requested tool calls and finish reasons."""
    value = parse_json(value)
    if not isinstance(value, list):
        return None
    texts: list[str] = []
    calls: list[ToolCall] = []
    reasons = list(finish_reasons or [])
    for item in value:
        if not isinstance(item, dict):
            continue
        for message in _parts_message(item):
            if isinstance(message, AssistantMessage):
                if message.content:
                    texts.append(message.content)
                calls.extend(message.tool_calls)
        reason = item.get("finish_reason")
        if isinstance(reason, str) and not finish_reasons:
            reasons.append(reason)
    return LLMOutput(text="\n".join(texts) if texts else None, tool_calls=calls, finish_reasons=reasons)


def parse_system_instructions(value: Any) -> SystemMessage | None:
    value = parse_json(value)
    text = content_text(value)
    return SystemMessage(content=text) if text else None


def object_schema(value: Any) -> dict[str, Any] | None:
    """A tool's declared parameters when the value is an object JSON schema (`{"type": "object", "properties"}`)."""
    schema = parse_json(value)
    if isinstance(schema, dict) and schema.get("type") == "object" and isinstance(schema.get("properties"), dict):
        return schema
    return None


def parse_tool_definitions(value: Any) -> list[ToolDefinition] | None:
    """OTel `gen_ai.tool.definitions`, OpenAI `{"type":"function","function":{...}}`, or Gemini declarations."""
    value = parse_json(value)
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        return None
    tools: list[ToolDefinition] = []
    for item in value:
        item = parse_json(item)
        if not isinstance(item, dict):
            continue
        declarations = item.get("function_declarations") or item.get("functionDeclarations")
        if isinstance(declarations, list):
            tools.extend(parse_tool_definitions(declarations) or [])
            continue
        fn = nested if isinstance(nested := item.get("function"), dict) else item
        name = fn.get("name")
        if not isinstance(name, str) or not name:
            continue
        params = (
            fn.get("parameters")
            or fn.get("parameters_json_schema")
            or fn.get("parametersJsonSchema")
            or fn.get("input_schema")
            or fn.get("inputSchema")
        )
        params = parse_json(params)
        description = fn.get("description")
        tools.append(
            ToolDefinition(
                name=name,
                description=description if isinstance(description, str) else None,
                parameters=params if isinstance(params, dict) else None,
            )
        )
    return tools


# --- OpenAI chat messages ---------------------------------------------------------------------


def openai_tool_calls(raw: Any) -> list[ToolCall]:
    calls = []
    for call in raw if isinstance(raw, list) else []:
        if not isinstance(call, dict):
            continue
        fn = nested if isinstance(nested := call.get("function"), dict) else call
        calls.append(make_tool_call(fn.get("name"), fn.get("arguments"), call.get("id")))
    return calls


def openai_message(item: dict) -> Message:
    role = normalize_role(item.get("role"))
    text = content_text(item.get("content"))
    if role == "tool":
        return ToolMessage(content=text, tool_call_id=item.get("tool_call_id") or item.get("id"), name=item.get("name"))
    return make_message(role, text, tool_calls=openai_tool_calls(item.get("tool_calls")))


# --- OpenAI Responses API objects -------------------------------------------------------------

# How OpenInference maps a Responses `status` / `incomplete_details.reason` to a finish reason.
_RESPONSE_STATUS_REASONS = {"completed": "stop", "max_output_tokens": "length"}


def responses_output(value: Any) -> LLMOutput | None:
    """The output of a serialized Responses-API `response` object (`{"object": "response", "output": [...]}`,
    alone or as the only item of a list): message text, function calls, and the finish reason its status implies."""
    value = parse_json(value)
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if not isinstance(value, dict) or value.get("object") != "response" or not isinstance(value.get("output"), list):
        return None
    texts: list[str] = []
    calls: list[ToolCall] = []
    for item in value["output"]:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "function_call":
            calls.append(make_tool_call(item.get("name"), item.get("arguments"), item.get("call_id") or item.get("id")))
        elif item.get("type") == "message" and isinstance(item.get("content"), list):
            parts = [p for p in item["content"] if isinstance(p, dict) and p.get("type") in ("output_text", "refusal")]
            texts.extend(t for t in (content_text(p) for p in parts) if t)
    details = value.get("incomplete_details")
    reason = details.get("reason") if isinstance(details, dict) else None
    reason = reason or value.get("status")
    reasons = [_RESPONSE_STATUS_REASONS.get(reason, reason)] if isinstance(reason, str) and reason else []
    return LLMOutput(text="\n".join(texts) or None, tool_calls=calls, finish_reasons=reasons)


# --- Gemini / ADK contents --------------------------------------------------------------------


def gemini_contents(contents: Any) -> list[Message]:
    messages: list[Message] = []
    for content in contents if isinstance(contents, list) else []:
        if isinstance(content, dict):
            messages.extend(gemini_content(content))
    return messages


def gemini_content(content: dict) -> list[Message]:
    role = normalize_role(content.get("role"))
    texts: list[str] = []
    calls: list[ToolCall] = []
    results: list[Message] = []
    parts = content.get("parts")
    for part in parts if isinstance(parts, list) else []:
        if not isinstance(part, dict):
            continue
        call = part.get("function_call") or part.get("functionCall")
        response = part.get("function_response") or part.get("functionResponse")
        if isinstance(call, dict):
            calls.append(make_tool_call(call.get("name"), call.get("args"), call.get("id")))
        elif isinstance(response, dict):
            results.append(
                ToolMessage(
                    content=as_text(response.get("response")) or "",
                    tool_call_id=response.get("id"),
                    name=response.get("name"),
                )
            )
        elif isinstance(part.get("text"), str) and not part.get("thought"):
            texts.append(part["text"])
    text = "\n".join(texts)
    head: list[Message] = []
    if text or calls or not results:
        head = [make_message(role, text, tool_calls=calls)]
    return head + results


def gemini_output(response: Any) -> LLMOutput | None:
    """An ADK `LlmResponse` / Gemini response (`content` or `candidates[0].content`)."""
    response = parse_json(response)
    if not isinstance(response, dict):
        return None
    content = response.get("content")
    if not isinstance(content, dict):
        candidates = response.get("candidates")
        if isinstance(candidates, list) and candidates and isinstance(candidates[0], dict):
            content = candidates[0].get("content")
    if not isinstance(content, dict):
        return None
    texts, calls = [], []
    for message in gemini_content(content):
        if isinstance(message, AssistantMessage):
            if message.content:
                texts.append(message.content)
            calls.extend(message.tool_calls)
    reason = response.get("finish_reason") or response.get("finishReason")
    return LLMOutput(
        text="\n".join(texts) if texts else None,
        tool_calls=calls,
        finish_reasons=[str(reason).lower()] if reason else [],
    )
