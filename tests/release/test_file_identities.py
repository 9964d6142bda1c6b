"""A file's identity is read once per file version (issue 37, item 1): remembered across
processes beside the ledger (``release.identities``), read again whenever the file's size,
times, inode or a Parquet part change, never remembered while the file is too recent for its
times to tell a rewrite (``plan.identity.RACY_SECONDS``)."""

from __future__ import annotations

from collections import OrderedDict

import pytest

from engine.sources import FileSource
from plan import identity
from plan.identity import content_digest
from plan.model import Count, Dataset, Noise, Plan, PlanQuery, PrivacyUnit
from release import Ledger, run
from release.identities import FileIdentities, known_digest


@pytest.fixture
def fresh_process(monkeypatch):
    """This process as a new one would be: nothing identified yet."""
    monkeypatch.setattr(identity, "_digest_cache", OrderedDict())
    return monkeypatch


@pytest.fixture
def settled(fresh_process):
    """Files count as old enough to remember at once (the racy window is tested alone)."""
    fresh_process.setattr(identity, "RACY_SECONDS", 0.0)
    return fresh_process


def reads(monkeypatch) -> list[str]:
    """Each time the data's cells are read to compute a digest."""
    calls: list[str] = []
    real = identity._digest_of

    def counted(*args, **kwargs):
        calls.append("read")
        return real(*args, **kwargs)

    monkeypatch.setattr(identity, "_digest_of", counted)
    return calls


def write_people(path, amounts):
    path.write_text("person,amount\n" + "".join(f"{i},{a}\n" for i, a in enumerate(amounts)))


def test_an_unchanged_file_is_not_read_again_by_a_new_process(tmp_path, settled):
    data = tmp_path / "people.csv"
    write_people(data, range(50))
    ledger = tmp_path / "ledger.sqlite"
    first = known_digest(FileSource(data, "csv"), ledger=ledger)
    assert first == content_digest(FileSource(data, "csv"))
    assert (tmp_path / "identities.sqlite").exists()   # beside the ledger

    settled.setattr(identity, "_digest_cache", OrderedDict())   # a new process
    counted = reads(settled)
    assert known_digest(FileSource(data, "csv"), ledger=ledger) == first
    assert known_digest(str(data), ledger=ledger) == first
    assert counted == []


def test_a_file_too_recent_to_tell_a_rewrite_is_never_remembered(tmp_path, fresh_process):
    fresh_process.setattr(identity, "RACY_SECONDS", 3600.0)
    data = tmp_path / "people.csv"
    write_people(data, range(20))
    ledger = tmp_path / "ledger.sqlite"
    counted = reads(fresh_process)
    first = known_digest(FileSource(data, "csv"), ledger=ledger)
    assert known_digest(FileSource(data, "csv"), ledger=ledger) == first
    assert counted == ["read", "read"]
    assert FileIdentities(ledger=ledger).read("test", "SELECT * FROM file_digests") == []


def test_a_store_that_cannot_be_used_only_costs_a_read(tmp_path, settled):
    data = tmp_path / "people.csv"
    write_people(data, range(20))
    broken = tmp_path / "identities.sqlite"
    broken.write_bytes(b"not a database at all, " * 100)
    settled.setenv("EPSILON_LAB_IDENTITIES", str(broken))
    assert known_digest(FileSource(data, "csv")) == content_digest(FileSource(data, "csv"))
    assert broken.read_bytes() == b"not a database at all, " * 100


def test_a_release_in_a_new_process_does_not_read_an_unchanged_file_to_identify_it(
        tmp_path, settled):
    data = tmp_path / "people.csv"
    write_people(data, range(40))
    plan = Plan(Dataset("people"), (PlanQuery("n", "People", Count(),
                                              Noise("laplace", "pure", epsilon=0.5)),),
                PrivacyUnit())
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        first = run(plan, FileSource(data, "csv"), ledger=ledger, budget=5.0)
    settled.setattr(identity, "_digest_cache", OrderedDict())   # a new process
    counted = reads(settled)
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        second = run(plan, FileSource(data, "csv"), ledger=ledger)
        spent = ledger.status(second.dataset).spent_epsilon
    assert counted == []
    assert second.dataset.content_hash == first.dataset.content_hash
    assert spent == pytest.approx(1.0)   # both releases charged to the same dataset


def test_the_command_line_remembers_the_identity_beside_its_ledger(tmp_path, settled,
                                                                   capsys):
    from release.cli import main

    data = tmp_path / "people.csv"
    write_people(data, range(30))
    plan = tmp_path / "plan.json"
    plan.write_text(Plan(Dataset("people"), (PlanQuery(
        "n", "People", Count(), Noise("laplace", "pure", epsilon=0.5)),),
        PrivacyUnit()).to_json())
    ledger = tmp_path / "cli" / "ledger.sqlite"
    args = ["--plan", str(plan), "--data", str(data), "--ledger", str(ledger), "--budget", "5"]
    assert main([*args, "--out", str(tmp_path / "a")]) == 0
    assert (ledger.parent / "identities.sqlite").exists()

    settled.setattr(identity, "_digest_cache", OrderedDict())   # the next command
    counted = reads(settled)
    assert main([*args, "--out", str(tmp_path / "b")]) == 0
    capsys.readouterr()
    assert counted == []
    with Ledger(ledger) as kept:
        first, second = kept.releases()
    assert first.dataset.content_hash == second.dataset.content_hash == content_digest(
        FileSource(data, "csv"))
