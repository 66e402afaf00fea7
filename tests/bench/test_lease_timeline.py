"""bench/lease_timeline.py: two judgements' leases laid on one time line give the shares of the wall
time in which a timing held the device, waited for shared leases to drain, shared leases ran alone,
or nothing was held; timings with no shared lease between them count as one batch."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import lease_timeline  # noqa: E402


def lease(mode, asked, granted, released, purpose="x"):
    return {"for": purpose, "mode": mode, "asked_s": asked, "granted_s": granted, "released_s": released}


def test_shares_and_batches_of_two_judgements():
    a = {"started_unix_s": 100.0, "leases": [lease("shared", 0, 0, 1), lease("exclusive", 0.5, 1.5, 2.5)]}
    b = {"started_unix_s": 100.2, "leases": [lease("shared", 0, 0, 1.3), lease("exclusive", 1.4, 2.3, 2.8),
                                             lease("shared", 2.8, 3.0, 3.3)]}
    unplaced = {"leases": [lease("exclusive", 0, 0, 50)]}  # no start time: left out
    t = lease_timeline.summary([a, b, unplaced])["lease_timeline"]
    assert t["seconds"] == pytest.approx(3.5)
    assert t["shared_share"] == pytest.approx(0.8 / 3.5)  # 0-0.5 and 3.2-3.5
    assert t["drain_share"] == pytest.approx(1.0 / 3.5)  # a's timing waits while shared leases run
    assert t["exclusive_share"] == pytest.approx(1.5 / 3.5)
    assert t["idle_share"] == pytest.approx(0.2 / 3.5)  # b's last shared lease waits for nothing held
    assert t["exclusive_holds"] == 2 and t["exclusive_hold_mean_s"] == pytest.approx(0.75)
    assert t["batches"] == 1 and t["batch_size_mean"] == 2
    # Shared holds 2.6 s (a 100-101, b 100.2-101.5 and 103.2-103.5) over 1.8 s with any held.
    assert t["shared_overlap"] == pytest.approx(2.6 / 1.8)
    assert t["held_seconds_per_timing"] == pytest.approx(3.3 / 2)
    assert t["held_s"] == {"x": pytest.approx(1 + 1 + 1.3 + 0.5 + 0.3)}  # every lease of a and b, summed


def test_held_seconds_are_summed_per_purpose():
    a = {"started_unix_s": 0.0, "leases": [lease("shared", 0, 0, 1, "reference"),
                                           lease("exclusive", 1, 1, 4, "profile_baselines"),
                                           lease("exclusive", 4, 4, 4.5, "profile_candidate")]}
    b = {"started_unix_s": 0.0, "leases": [lease("shared", 0, 0, 2, "reference")]}
    held = lease_timeline.summary([a, b])["lease_timeline"]["held_s"]
    assert held == {"profile_baselines": pytest.approx(3), "profile_candidate": pytest.approx(0.5),
                    "reference": pytest.approx(3)}


def test_a_shared_lease_between_timings_splits_the_batches_and_no_leases_is_none():
    a = {"started_unix_s": 0.0, "leases": [lease("exclusive", 0, 0, 1), lease("shared", 1, 1, 2),
                                           lease("exclusive", 2, 2, 3)]}
    t = lease_timeline.summary([a])["lease_timeline"]
    assert t["batches"] == 2 and t["batch_size_mean"] == 1
    assert t["idle_share"] == 0 and t["drain_share"] == 0
    assert t["shared_overlap"] == pytest.approx(1.0) and t["held_seconds_per_timing"] == pytest.approx(1.5)
    assert lease_timeline.summary([{"started_unix_s": 0.0, "leases": []}]) == {"lease_timeline": None}


def test_the_median_hold_of_each_purpose():
    a = {"started_unix_s": 0.0, "leases": [lease("shared", 0, 0, 1, "reference"),
                                           lease("exclusive", 1, 1, 1.5, "profile_candidate")]}
    b = {"started_unix_s": 5.0, "leases": [lease("shared", 0, 0, 3, "reference"),
                                           lease("shared", 3, 3, 3.2, "reference"),
                                           lease("exclusive", 4, 4, 5.5, "profile_candidate")]}
    unplaced = {"leases": [lease("exclusive", 0, 0, 50, "profile_candidate")]}
    t = lease_timeline.summary([a, b, unplaced])["lease_timeline"]
    assert t["hold_median_s"] == pytest.approx({"profile_candidate": 1.0, "reference": 1.0})
