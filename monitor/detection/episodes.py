"""Drift episodes: how long an active change has lasted, kept in the store so that its `since` survives a restart
and is the same on every replica.

`merge_episodes` joins a new report with the stored episodes: an active change already stored in the same
direction keeps its stored `since`; a new one (or one whose direction flipped: a new episode) starts at the
report's time; a stored episode whose change is no longer active ends. An incomplete report ends nothing: a
signal it lacks may be one whose read failed.

A flip both ends and starts its key: the ended keys must be deleted before the started episodes are inserted (an
insert keeps an episode already stored under the key, so that the first replica's `since` wins).
"""

from __future__ import annotations

from collections.abc import Iterable

from monitor.store.signal_rows import DriftEpisode

from .model import DriftReport, SignalState

EpisodeKey = tuple[str, str, str, str]  # (service, agent, signal, subject)


def episode_key(item: SignalState | DriftEpisode) -> EpisodeKey:
    return item.service, item.agent, item.signal, item.subject


def merge_episodes(
    report: DriftReport, stored: Iterable[DriftEpisode]
) -> tuple[DriftReport, list[DriftEpisode], list[EpisodeKey]]:
    """The report with each active change's `since`, the episodes it starts and the keys of those it ends."""
    known = {episode_key(e): e for e in stored}
    started: list[DriftEpisode] = []
    ended: list[EpisodeKey] = []
    kept: set[EpisodeKey] = set()
    signals = []
    for state in report.signals:
        key = episode_key(state)
        if not state.active or state.direction is None:
            signals.append(state.model_copy(update={"since": None}) if state.since is not None else state)
            continue
        episode = known.get(key)
        if episode is not None and episode.direction == state.direction.value:
            kept.add(key)
            signals.append(state.model_copy(update={"since": episode.since}))
            continue
        if episode is not None:
            ended.append(key)  # the direction flipped: the old episode ends, a new one starts
            kept.add(key)
        started.append(DriftEpisode(*key, direction=state.direction.value, since=report.as_of))
        signals.append(state.model_copy(update={"since": report.as_of}))
    if report.complete:
        ended.extend(key for key in sorted(known) if key not in kept)
    return report.model_copy(update={"signals": signals}), started, ended


__all__ = ["EpisodeKey", "episode_key", "merge_episodes"]
