"""The per-request records Locust writes, read, split by stage, counted per worker and written back."""

import json

import pytest

from labserver import protocol
from labserver.harness.rows import records
from labserver.harness.rows.records import Record


def _locust_file(folder, name, users, t0=None):
    """A `records.<n>.json` as a Locust process writes it: its start and one list of records per user."""
    data = {"users": users} if t0 is None else {"t0": t0, "users": users}
    (folder / name).write_text(json.dumps(data))


def test_a_record_was_sent_its_latency_before_it_ended():
    assert Record(10.6, 100.0, True).sent == pytest.approx(10.5)
    assert Record(3.0, 2500.0, False, None, 1).sent == pytest.approx(0.5)


def test_a_record_without_pid_or_stage_has_none_and_stage_zero():
    r = Record(1.0, 5.0, True)
    assert (r.pid, r.stage) == (None, 0)


def test_parsed_takes_records_with_and_without_pid_and_stage():
    per_user = protocol.parsed([[[1.0, 5.0, True], [2.0, 5.0, True, 7, 1]], []])
    assert per_user == [[Record(1.0, 5.0, True, None, 0), Record(2.0, 5.0, True, 7, 1)], []]
    assert all(type(r) is Record for r in per_user[0])


def test_counts_requests_per_worker_pid():
    per_user = [[Record(1.0, 5, True, 11), Record(2.0, 5, True, 11)], [Record(1.5, 5, True, 22)]]
    assert records.counts(per_user) == {11: 2, 22: 1}


def test_counts_only_what_finished_after_the_warm_up():
    per_user = [[Record(0.5, 5, True, 11), Record(1.5, 5, True, 22), Record(2.5, 5, False, 22)]]
    assert records.counts(per_user, since=1.0) == {22: 2}


def test_records_without_a_pid_are_skipped():
    # three-element records (an older locustfile) and replies that never came (pid None)
    per_user = protocol.parsed([[[1.0, 5, True], [2.0, 5, False, None], [3.0, 5, True, 7]]])
    assert records.counts(per_user) == {7: 1}


def test_no_records_no_workers():
    assert records.counts([]) == {}
    assert records.counts([[]]) == {}


def test_stage_records_keep_the_stage_and_its_users():
    files = {
        "records.1.json": [
            [Record(1.0, 5.0, True, 7, 0), Record(2.0, 5.0, True, 7, 1)],
            [Record(1.5, 5.0, True, 7, 1)],
            [],
        ]
    }
    assert records.stage(files, 0, users=1) == {"records.1.json": [[Record(1.0, 5.0, True, 7, 0)]]}
    assert records.stage(files, 1, users=3) == {
        "records.1.json": [[Record(2.0, 5.0, True, 7, 1)], [Record(1.5, 5.0, True, 7, 1)], []]
    }


def test_read_plan_takes_the_earliest_start_of_all_processes(tmp_path):
    _locust_file(tmp_path, "records.1.json", [[[12.0, 5.0, True, 7, 0]]], t0=10.5)
    _locust_file(tmp_path, "records.2.json", [[[11.0, 5.0, True, 8, 0]]], t0=10.0)
    _locust_file(tmp_path, "records.3.json", [[]])  # no start written: it does not count
    t0, files = records.read_plan(tmp_path)
    assert t0 == 10.0
    assert sorted(files) == ["records.1.json", "records.2.json", "records.3.json"]


def test_read_plan_gives_back_records(tmp_path):
    _locust_file(tmp_path, "records.1.json", [[[12.0, 5.0, True, 7, 1], [12.5, 6.0, False]], []], t0=10.0)
    _, files = records.read_plan(tmp_path)
    assert files == {"records.1.json": [[Record(12.0, 5.0, True, 7, 1), Record(12.5, 6.0, False)], []]}
    assert all(type(r) is Record for r in files["records.1.json"][0])


def test_read_plan_takes_nothing_from_a_file_cut_short(tmp_path):
    _locust_file(tmp_path, "records.1.json", [[[12.0, 5.0, True, 7, 0]]], t0=10.0)
    (tmp_path / "records.2.json").write_text('{"t0": 9.0, "users": [[[11.0, 5.0, tr')  # Locust killed mid-write
    t0, files = records.read_plan(tmp_path)
    assert t0 == 10.0
    assert files["records.1.json"] == [[Record(12.0, 5.0, True, 7, 0)]]
    assert not files.get("records.2.json")


def test_read_plan_leaves_out_a_file_cut_short(tmp_path):
    _locust_file(tmp_path, "records.1.json", [[[12.0, 5.0, True, 7, 0]]], t0=10.0)
    (tmp_path / "records.2.json").write_text('{"t0": 9.0, "users": [[[11.0, 5.0, tr')
    assert list(records.read_plan(tmp_path)[1]) == ["records.1.json"]


def test_read_plan_skips_a_file_that_is_not_locust_s(tmp_path):
    _locust_file(tmp_path, "records.1.json", [[[12.0, 5.0, True, 7, 0]]], t0=10.0)
    (tmp_path / "records.2.json").write_text(json.dumps([[[11.0, 5.0, True]]]))  # a run's share: plain lists
    assert list(records.read_plan(tmp_path)[1]) == ["records.1.json"]


def test_read_plan_of_an_empty_folder(tmp_path):
    assert records.read_plan(tmp_path) == (None, {})


def test_what_is_written_is_read_back_across_files(tmp_path):
    files = {
        "records.1.json": [[Record(1.0, 5.0, True, 7, 0), Record(2.0, 6.0, False, None, 0)], []],
        "records.2.json": [[Record(1.5, 4.0, True, 8, 0)]],
    }
    records.write(tmp_path, files)
    per_user = records.read(tmp_path)
    assert per_user == [*files["records.1.json"], *files["records.2.json"]]
    assert all(type(r) is Record for user in per_user for r in user)


def test_written_records_are_plain_per_user_lists(tmp_path):
    records.write(tmp_path, {"records.1.json": [[Record(1.0, 5.0, True, 7, 2)]]})
    assert json.loads((tmp_path / "records.1.json").read_text()) == [[[1.0, 5.0, True, 7, 2]]]


def test_read_skips_a_file_cut_short(tmp_path):
    records.write(tmp_path, {"records.1.json": [[Record(1.0, 5.0, True, 7)]]})
    (tmp_path / "records.2.json").write_text("[[[1.0, 5")
    assert records.read(tmp_path) == [[Record(1.0, 5.0, True, 7)]]


def test_answers_per_user_reads_the_records(tmp_path):
    # records as the locustfile writes them, with and without the worker pid
    (tmp_path / "records.1.json").write_text(json.dumps([[[1.0, 100.0, True], [2.0, 3000.0, False]], []]))
    (tmp_path / "records.2.json").write_text(json.dumps([[[1.5, 90.0, True, 4242]]]))
    per_user = records.answers_per_user(tmp_path)
    assert per_user["answered"].tolist() == [1, 0, 1]
    assert per_user["failed"].tolist() == [1, 0, 0]


def test_answers_per_user_of_an_empty_folder(tmp_path):
    assert records.answers_per_user(tmp_path).empty


def test_an_open_loops_record_keeps_when_it_should_have_left():
    late = Record(10.6, 100.0, True, 7, 0, 10.3)  # meant to leave at 10.3, left at 10.5
    assert late.sent == pytest.approx(10.5) and late.from_intended_ms == pytest.approx(300.0)
    assert Record(10.6, 100.0, True).from_intended_ms == 100.0  # a closed loop's: no schedule
    assert protocol.parsed([[[1.0, 5.0, True, 7, 0, 0.99]]]) == [[Record(1.0, 5.0, True, 7, 0, 0.99)]]


def test_bursts_group_replies_closer_than_the_gap():
    # two users in step (replies 1 ms apart), then a lone reply 100 ms later; a failure is not a reply
    per_user = [
        [Record(10.000, 5, True), Record(10.101, 5, True)],
        [Record(10.001, 5, True), Record(10.050, 5, False)],
    ]
    out = records.bursts(per_user, gap_ms=5)
    assert out["size"].tolist() == [2, 1]
    assert out["first"].tolist() == [10.000, 10.101]


def test_bursts_chain_through_close_replies_and_are_empty_without_any():
    chain = [[Record(1.000 + i * 0.004, 5, True) for i in range(4)]]  # each 4 ms after the last: one burst
    assert records.bursts(chain, gap_ms=5)["size"].tolist() == [4]
    assert records.bursts([], gap_ms=5).empty


def _bunches(size: int, spacing_s: float, every_s: float, count: int, users: int = 4) -> list[list[Record]]:
    """`count` bunches of `size` replies `spacing_s` apart, one bunch every `every_s`, dealt round the users."""
    per_user: list[list[Record]] = [[] for _ in range(users)]
    n = 0
    for b in range(count):
        for k in range(size):
            per_user[n % users].append(Record(end=100.0 + b * every_s + k * spacing_s, ms=10.0, ok=True))
            n += 1
    return per_user


def test_replies_in_bunches_are_back_to_back_far_more_than_at_random():
    # bunches of 4 replies 0.05 ms apart every 10 ms: 3 of every 4 gaps are back to back
    close, at_random = records.bunched(_bunches(4, 0.00005, 0.01, 200), (0, 1e9), gap_ms=0.3)
    assert close == pytest.approx(0.75, abs=0.01)
    assert at_random == pytest.approx(1 - 2.718281828 ** (-0.3 / 2.5), abs=0.01)  # mean gap 10 ms / 4


def test_spread_replies_are_not_back_to_back_and_a_window_cuts_them():
    spread = _bunches(1, 0.0, 0.002, 500)  # one reply every 2 ms
    close, at_random = records.bunched(spread, (0, 1e9), gap_ms=0.3)
    assert close == 0.0 and 0 < at_random < 0.2
    assert all(map(lambda x: x != x, records.bunched(spread, (100.0, 100.003), gap_ms=0.3)))  # 2 replies: NaN
