"""The engine: ingest and admission, trace assembly, evaluation workers, evaluator setup."""
