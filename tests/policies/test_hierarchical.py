"""`hierarchical`: raw turns fold into checkpoints, checkpoints into epochs, epochs into an era.

The session (policy_story). With checkpoint_every=2 a checkpoint is made as soon as two raw turns
have piled up since the last summary, their results included (seed 003 compacts at the start of the
next turn): the context of request 3 is u a1 r1 a2 r2, and all five become checkpoint `S`. With
epoch_every=2 the second checkpoint is folded at once with the first into an epoch (one event,
named after the highest level made); with era_every=2 the second epoch folds with the first into
the era summary.
"""

from __future__ import annotations

from policy_story import events, play, same_as_reference, story

from ctxsim.policies import hierarchical


def levels(probe, request: int) -> list[str]:
    return [next(t for t in sorted(it.tags) if t.startswith("level")) for it in probe.items[request] if it.inserted]


def test_checkpoints_fold_into_epochs():
    run, probe = play(story(8), "hierarchical:checkpoint_every=2,epoch_every=2,era_every=0")
    assert probe.seen[2] == ["u", "a1", "r1"]
    assert probe.seen[3] == ["S"] and levels(probe, 3) == ["level1"]
    assert probe.seen[4] == ["S", "a3", "r3"]
    assert probe.seen[5] == ["S"] and levels(probe, 5) == ["level2"]  # checkpoint of a3 .. r4, then the epoch
    assert events(run) == [(3, "checkpoint", "checkpoint: 5 messages"),
                           (5, "epoch", "epoch: 4 messages and 1 summaries"),
                           (7, "checkpoint", "checkpoint: 4 messages"),
                           (9, "epoch", "epoch: 4 messages and 1 summaries")]
    assert levels(probe, 9) == ["level2", "level2"]  # no eras: epochs pile up


def test_epochs_fold_into_the_era():
    run, probe = play(story(8), "hierarchical:checkpoint_every=2,epoch_every=2,era_every=2")
    assert [kind for _, kind, _ in events(run)] == ["checkpoint", "epoch", "checkpoint", "era"]
    assert levels(probe, 9) == ["level3"]
    # The summaries are extractive, written offline: no summarising request is metered.
    assert not [r for r in run.rows if r.kind == "summarize"]


def test_without_epochs_checkpoints_pile_up():
    run, probe = play(story(8), "hierarchical:checkpoint_every=2,epoch_every=0")
    assert [(k, kind) for k, kind, _ in events(run)] == [(3, "checkpoint"), (5, "checkpoint"), (7, "checkpoint"),
                                                        (9, "checkpoint")]
    assert levels(probe, 9) == ["level1"] * 4


def test_the_reference_that_finds_its_summaries_by_their_tags_makes_the_same_edits():
    for spec in ("hierarchical:checkpoint_every=2,epoch_every=2,era_every=2", "hierarchical:checkpoint_every=3"):
        assert events(same_as_reference(hierarchical, spec, story(20)))
