"""`neardup serve --worker-ports`: each worker also listens on a port of its own, and a client given every worker's
address spreads one process's calls over all of them (gRPC's round_robin), where the shared port hands its one
connection to one worker."""
from __future__ import annotations

import asyncio

import pytest

from neardup_client import AsyncNearDupClient, NearDupClient
from neardup_client.cli_framework import EXIT_FAILED, EXIT_USAGE
from neardup_client._client import channel_target
from server_process import free_port, free_ports, run_neardup, serving

pytestmark = pytest.mark.slow


def corpus() -> dict[str, str]:
    return {"a": "the first of the stored texts", "b": "and the second one stored beside it"}


def test_one_client_process_reaches_every_worker(store):
    first = free_ports(3)
    with serving(store, "--worker-ports", str(first), workers=3) as server:
        log = server.log()
        for worker in range(3):
            assert f"and 127.0.0.1:{first + worker} " in log
        target = ",".join(f"127.0.0.1:{first + worker}" for worker in range(3))
        with NearDupClient(target) as spread:
            answered = [spread.info().worker for _ in range(60)]
        # round robin over the connections that are ready: the first calls may go before all three are
        assert len(set(answered)) == 3 and all(answered[30:].count(pid) == 10 for pid in set(answered)), answered
        with NearDupClient(server.target) as shared:  # one connection: one worker, whichever the kernel chose
            assert len({shared.info().worker for _ in range(30)}) == 1

        async def spread_async():
            async with AsyncNearDupClient(target) as client:
                return {(await client.info()).worker for _ in range(30)}
        assert asyncio.run(spread_async()) == set(answered)
        done = run_neardup("info", "--target", target)
        assert done.returncode == 0, done.stderr


def test_worker_ports_that_overlap_or_are_taken_are_refused(store):
    port = free_port()
    done = run_neardup("serve", "--store", str(store), "--port", str(port), "--workers", "2", "--worker-ports",
                       str(port - 1))
    assert done.returncode == EXIT_USAGE and "must not hold --port" in done.stderr
    done = run_neardup("serve", "--store", str(store), "--workers", "2", "--worker-ports", "65535")
    assert done.returncode == EXIT_USAGE and "--worker-ports must be in 1..65534" in done.stderr
    first = free_ports(2)
    with serving(store, "--worker-ports", str(first), workers=2):
        taken = run_neardup("serve", "--store", str(store), "--port", str(free_port()), "--worker-ports",
                            str(first + 1))
    assert taken.returncode == EXIT_FAILED and f"cannot listen on 127.0.0.1:{first + 1}" in taken.stderr


def test_several_addresses_must_be_ip_literals():
    assert channel_target("127.0.0.1:1,127.0.0.1:2") == ("ipv4:127.0.0.1:1,127.0.0.1:2", True)
    assert channel_target("[::1]:1,[::1]:2") == ("ipv6:[::1]:1,[::1]:2", True)
    assert channel_target("dns:///search.internal:50051") == ("dns:///search.internal:50051", False)
    with pytest.raises(ValueError, match="for a name, give dns:///NAME:PORT"):
        NearDupClient("search-a:1,search-b:1")
