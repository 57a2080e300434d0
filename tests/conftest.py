"""Fixtures shared by the test modules: the command line run in this process, stores indexed from a corpus (the
module's own texts by default), where a store of each backend goes, and a server (with a client) on the module's
`store`. Plain helpers are modules beside this one: server_process.py (real server processes,
stores of given sketches), textgen.py, sketches.py, brute.py, certs.py and observe.py (tests/README.md)."""
from __future__ import annotations

import itertools
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

# the shared helpers' asserts report like a test's own (before anything imports them)
pytest.register_assert_rewrite("brute", "certs", "observe", "server_process", "sketches", "textgen")

from neardup.cli.main import main  # noqa: E402
from neardup_client import NearDupClient  # noqa: E402
from server_process import RedisClusterServers, RedisServer, serving, write_jsonl  # noqa: E402

# A suite started in the background of a non-interactive shell (`bash .ci/run &`, nohup) inherits SIGINT ignored,
# and so would every command it starts: Python then installs no Ctrl-C handler, and the tests of Ctrl-C (exit 130)
# would see their command run to the end. A handler here is reset to the default in each child, as a terminal's is.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

TESTS = Path(__file__).parent
#: `pytest -m fast` takes the tests of these folders, and of these modules of tests/service (whose others run real
#: servers; tests/corpora builds the benchmark corpora; tests/jobs runs the offline stages, seconds each: the full
#: suite's)...
FAST_FOLDERS = {"core", "store", "runtime", "cli"}
FAST_SERVICE_MODULES = {"test_wire.py", "test_fuzz.py", "test_proto_fresh.py"}
#: ...but for those marked slow or redis, and those using a fixture that starts a process: a `neardup serve`
#: (`server` or any `*_server(s)`, and what uses one: client, channel...), redis-server (`redis_server`, and so
#: redis_url), the Dask `cluster`, a store made by a real `neardup index` (`auto_store`).
PROCESS_FIXTURES = {"server", "cluster", "auto_store", "redis_cluster"}
#: The tests of the compiled code: .ci/sanitize runs those of these modules against a build with AddressSanitizer
#: and UBSan (marked sanitized: all but their Redis variants, which would need a redis-server, and those marked
#: unsanitized), and .ci/run's first pass leaves out what that pass runs but for the fast tests, so each slow test
#: of the C code runs once in CI.
SANITIZED_MODULES = {
    "core/test_kernel.py", "core/test_items.py", "core/test_items_reference.py", "core/test_simhash_core.py",
    "core/test_sketch.py", "core/test_sketch_golden.py", "core/test_sketch_compiled.py", "core/test_id_map.py",
    "core/test_memory_index.py", "runtime/test_view.py", "runtime/test_shared_index.py",
    "runtime/test_similar_core.py", "service/test_wire.py", "service/test_fuzz.py", "service/test_bad_input.py",
    "store/test_shards.py",
}


def _starts_a_process(fixture: str) -> bool:
    return fixture in PROCESS_FIXTURES or fixture.endswith(("_server", "_servers"))


def _fast(item: pytest.Item, where: tuple[str, ...]) -> bool:
    """where: the test module's path under tests/, as parts."""
    if not (where[0] in FAST_FOLDERS or where[0] == "service" and where[-1] in FAST_SERVICE_MODULES):
        return False
    if item.get_closest_marker("slow") or item.get_closest_marker("redis"):
        return False
    return not any(_starts_a_process(name) for name in item.fixturenames)


def pytest_configure(config):
    """A module renamed or moved would leave the sanitizer pass without its tests, silently: refuse to run."""
    missing = sorted(m for m in SANITIZED_MODULES if not (TESTS / m).is_file())
    if missing:
        raise pytest.UsageError(f"tests/conftest.py: SANITIZED_MODULES names no such module: {', '.join(missing)}")


def pytest_collection_modifyitems(config, items):
    """Marks redis what uses the session's redis-server, then fast what runs in this process in seconds, and
    sanitized the tests of the compiled code .ci/sanitize runs."""
    for item in items:
        where = item.path.relative_to(TESTS)
        if "redis_server" in item.fixturenames or "redis_cluster" in item.fixturenames:
            item.add_marker(pytest.mark.redis)
        if _fast(item, where.parts):
            item.add_marker(pytest.mark.fast)
        if (where.as_posix() in SANITIZED_MODULES and not item.get_closest_marker("redis")
                and not item.get_closest_marker("unsanitized")):
            item.add_marker(pytest.mark.sanitized)


@pytest.fixture
def neardup(capsys) -> Callable[..., subprocess.CompletedProcess]:
    """`neardup ARGS` through its main() in this process, which saves an interpreter start-up (or another entry
    point's, entry=neardup_client.cli.main). Answers like subprocess.run: the exit code the interpreter would
    give (a SystemExit included), stdout and stderr."""
    def run(*args, entry: Callable[[list[str]], int] = main) -> subprocess.CompletedProcess:
        argv = [str(arg) for arg in args]
        capsys.readouterr()
        try:
            code = entry(argv)
        except SystemExit as exit_:
            code = 0 if exit_.code is None else exit_.code if isinstance(exit_.code, int) else 1
            if isinstance(exit_.code, str):
                print(exit_.code, file=sys.stderr)
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(argv, code, out, err)
    return run


@pytest.fixture(scope="session")
def indexed_store(tmp_path_factory) -> Callable[..., Path]:
    """indexed_store(name, {id: text}, *index_args): a new store (NAME*/store) made by `neardup index` in this
    process from those texts (NAME*/corpus.jsonl), with the default sketch configuration unless index_args say."""
    def make(name: str, texts: dict[str, str], *args: str) -> Path:
        root = tmp_path_factory.mktemp(name)
        corpus = write_jsonl(root / "corpus.jsonl", [{"id": doc_id, "text": text} for doc_id, text in texts.items()])
        assert main(["index", str(corpus), "--store", str(root / "store"), *args]) == 0
        return root / "store"
    return make


@pytest.fixture(scope="module")
def store(request, indexed_store) -> Path:
    """The test module's store: its corpus() texts indexed by `neardup index` in this process, with the module's
    INDEX_ARGS if it has them ("--sketch", "simhash"). A module with another kind of store defines its own."""
    module = request.module
    if not hasattr(module, "corpus"):
        pytest.fail(f"{module.__name__} uses the store fixture but has no corpus() of texts to index")
    return indexed_store(module.__name__.removeprefix("test_").replace("_", "-"), module.corpus(),
                         *getattr(module, "INDEX_ARGS", ()))


@pytest.fixture(params=["lmdb", pytest.param("redis", marks=pytest.mark.redis),
                        pytest.param("redis-cluster", marks=pytest.mark.redis)])
def store_location(request, tmp_path) -> Path | str:
    """Where a new store of each backend goes, nothing made there yet: an LMDB directory, or a prefix of its own on
    the session's redis-server or Redis Cluster."""
    if request.param == "lmdb":
        return tmp_path / "store"
    return request.getfixturevalue("redis_url" if request.param == "redis" else "redis_cluster_url")


@pytest.fixture(scope="module")
def server(store):
    """`neardup serve` on the store the test module defines as its `store` fixture."""
    with serving(store) as running:
        yield running


@pytest.fixture
def client(server):
    with NearDupClient(server.target, timeout=10) as connected:
        yield connected


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory) -> RedisServer:
    """One redis-server (Debian's package; .ci/run installs it) for the session: each test's store has a prefix
    of its own (redis_url)."""
    if shutil.which("redis-server") is None:
        pytest.fail("redis-server is not installed: apt-get install redis-server (as .ci/run does)")
    with RedisServer(tmp_path_factory.mktemp("redis")) as running:
        yield running


_redis_prefixes = itertools.count()


@pytest.fixture
def redis_url(redis_server) -> str:
    """The URL of a Redis store no other test uses (a prefix of its own on the session's redis-server)."""
    return redis_server.url(f"test{next(_redis_prefixes)}")


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory) -> RedisClusterServers:
    """One Redis Cluster (3 primaries, a replica each) for the session: each test's store has a prefix of its own
    (redis_cluster_url)."""
    if shutil.which("redis-server") is None:
        pytest.fail("redis-server is not installed: apt-get install redis-server (as .ci/run does)")
    with RedisClusterServers(tmp_path_factory.mktemp("redis-cluster")) as running:
        yield running


@pytest.fixture
def redis_cluster_url(redis_cluster) -> str:
    """The URL of a cluster store no other test uses (a prefix of its own on the session's Redis Cluster)."""
    return redis_cluster.url(f"test{next(_redis_prefixes)}")
