"""The agent's log records in Python's logging (ftl/_logging.py), on real agents over loopback: a record
arrives as a LogRecord on the component's child logger with its fields as values, records from the agent's
own loop thread arrive too, each agent keeps its name and level, the settings' warnings take the same path
(a misspelled FTL_* name is refused instead, unless the program declared it), and without a logger the
records stay lines on stderr."""
import logging
import os
import threading
import time

import ftl
from conftest import free_port


class Keep(logging.Handler):
    """Keeps every record it is handed (from any thread)."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records, self.seen = [], threading.Condition()

    def emit(self, record):
        with self.seen:
            self.records.append(record)
            self.seen.notify_all()

    def wait_for(self, what, timeout=20.0):
        with self.seen:
            self.seen.wait_for(lambda: any(what(r) for r in self.records), timeout)
            return [r for r in self.records if what(r)]


def kept_logger(name):
    logger = logging.getLogger(name)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    handler = Keep()
    logger.handlers[:] = [handler]
    return logger, handler


def test_record_arrives_in_logging_with_its_fields(run_dir):
    logger, kept = kept_logger("ftltest.one")
    port = free_port()
    with ftl.Agent(logger=logger, name="py-a", insecure=1, run_dir=run_dir, bind=f"127.0.0.1:{port}",
                   log_level="info", profile="local"):
        pass
    started = [r for r in kept.records if r.getMessage() == "started"]
    assert started, [r.getMessage() for r in kept.records]
    r = started[0]
    assert r.name == "ftltest.one.agent" and r.levelno == logging.INFO
    assert r.ftl_agent == "py-a" and r.ftl_component == "agent"
    assert r.ftl_fields["bind"] == f"127.0.0.1:{port}" and r.ftl_fields["cluster"] == "ftl"
    assert r.ftl_fields["profile"] == "local"
    assert abs(r.created - time.time()) < 60
    insecure = [r for r in kept.records if r.getMessage().startswith("FTL_INSECURE=1")]
    assert insecure and insecure[0].levelno == logging.WARNING


def test_two_agents_log_with_their_own_name_and_level_from_their_threads(run_dir):
    la, ka = kept_logger("ftltest.a")
    lb, kb = kept_logger("ftltest.b")
    first = free_port()
    common = dict(insecure=1, run_dir=run_dir, profile="local")
    a = ftl.Agent(logger=la, name="py-a", bind=f"127.0.0.1:{first}", log_level="info", **common)
    b = ftl.Agent(logger=lb, name="py-b", bind=f"127.0.0.1:{free_port()}", log_level="warn",
                  seeds=f"127.0.0.1:{first}", **common)
    try:
        a.start()
        b.start()
        joins = ka.wait_for(lambda r: r.getMessage() == "member join" and r.ftl_fields.get("member") == "py-b")
    finally:
        b.close()
        a.close()
    assert joins, "py-a's logger never heard py-b join"
    join = joins[0]
    assert join.name == "ftltest.a.membership" and join.ftl_agent == "py-a"
    assert isinstance(join.ftl_fields["generation"], int) and join.ftl_fields["generation"] > 0
    assert join.thread != threading.main_thread().ident, "the join came from the agent's loop thread"
    assert all(r.ftl_agent == "py-a" for r in ka.records)
    assert kb.records and all(r.ftl_agent == "py-b" and r.levelno >= logging.WARNING for r in kb.records)


def test_settings_warning_reaches_logging(run_dir, tmp_path):
    logger, kept = kept_logger("ftltest.settings")
    key_file = tmp_path / "key"
    key_file.write_text("A" * 43 + "=\n")
    key_file.chmod(0o644)  # others can read the cluster key: warned about, not refused
    agent = ftl.Agent(logger=logger, name="py-s", gossip_key_file=str(key_file), run_dir=run_dir,
                      bind=f"127.0.0.1:{free_port()}")
    agent.close()
    warned = [r for r in kept.records if r.ftl_fields.get("file") == str(key_file)]
    assert warned and warned[0].ftl_fields["mode"] == 0o644, [r.getMessage() for r in kept.records]
    assert warned[0].name == "ftltest.settings.config" and warned[0].levelno == logging.WARNING


def refusal_of(settings):
    try:
        ftl.Agent(**settings).close()
    except ftl.ConfigError as e:
        return e
    return None


def test_misspelled_setting_is_refused_unless_the_program_declared_it(run_dir):
    settings = dict(name="py-m", insecure=1, run_dir=run_dir, bind=f"127.0.0.1:{free_port()}")
    os.environ["FTL_MAX_WORKER"] = "4"
    try:
        e = refusal_of(settings)
    finally:
        del os.environ["FTL_MAX_WORKER"]
    assert e and e.variable == "FTL_MAX_WORKER" and "did you mean FTL_MAX_WORKERS?" in str(e), e
    os.environ["FTL_PY_TEST_EPOCHS"] = "4"  # the program's own setting
    try:
        e = refusal_of(settings)
        assert e and e.variable == "FTL_PY_TEST_EPOCHS", e
        ftl.add_known_setting("FTL_PY_TEST_EPOCHS")
        assert refusal_of(settings) is None
    finally:
        del os.environ["FTL_PY_TEST_EPOCHS"]


def test_without_a_logger_records_are_lines_on_stderr(run_dir, capfd):
    logger, kept = kept_logger("ftl")
    with ftl.Agent(name="py-e", insecure=1, run_dir=run_dir, bind=f"127.0.0.1:{free_port()}", log_level="info"):
        pass
    err = capfd.readouterr().err
    assert 'level=info agent=py-e component=agent msg="started" bind=127.0.0.1:' in err, err
    assert not kept.records


def test_a_handler_that_blocks_never_stops_gossip(run_dir):
    """A handler that blocks (a slow sink, a lock, or any record waiting for a GIL that a long C call holds)
    used to run on the agent's loop thread and stop its gossip: the peer declared the live worker dead by
    suspicion while it sat with no line out (issue 24, item 10). Records from the loop thread now reach
    logging from a delivery thread: the peer keeps the worker alive, its control socket answers, and the
    held record still arrives, in order, once the handler lets go."""
    release, blocked = threading.Event(), threading.Event()

    class Blocking(Keep):
        def emit(self, record):
            if record.getMessage() == "member join" and not release.is_set():
                blocked.set()
                release.wait(60)
            super().emit(record)

    logger = logging.getLogger("ftltest.blocking")
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    kept = Blocking()
    logger.handlers[:] = [kept]
    first = free_port()
    common = dict(insecure=1, run_dir=run_dir)  # the train profile: a silent member is dead in about 0.5 s
    slow = ftl.Agent(logger=logger, name="py-slow", bind=f"127.0.0.1:{first}", log_level="info", **common)
    peer = ftl.Agent(name="py-peer", bind=f"127.0.0.1:{free_port()}", seeds=f"127.0.0.1:{first}",
                     log_level="error", **common)
    try:
        slow.start()
        peer.start()
        assert blocked.wait(20), "the handler never saw py-peer join"
        bound_s = peer.status()["timing"]["detection_bound_ms"] / 1000.0
        until = time.monotonic() + max(4.0, 2 * bound_s)
        while time.monotonic() < until:  # the handler is still blocked all this time
            seen = {m["name"]: m["status"] for m in peer.members()}
            assert seen.get("py-slow") == "alive", f"the peer sees py-slow {seen.get('py-slow')}"
            assert slow.status(timeout=2.0)["self"]["name"] == "py-slow"
            time.sleep(0.2)
        assert not [r for r in kept.records if r.getMessage() == "member join"], "the held record got past"
    finally:
        release.set()
        peer.close()
        slow.close()
    deferred = [r.getMessage() for r in kept.records if r.thread != threading.main_thread().ident]
    assert deferred and deferred[0] == "member join", deferred  # the loop thread's records, in order
