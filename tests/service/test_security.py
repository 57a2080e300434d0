"""TLS, mutual TLS and the bearer token, against real `neardup serve` processes with certificates made here.

The certificates come from the `cryptography` package (a CA, a server certificate for 127.0.0.1 and
localhost, a client certificate, and a second CA nobody trusts), so the tests need no openssl and no files.
"""
from __future__ import annotations

import ipaddress
import re
from pathlib import Path

import grpc
import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase

from neardup_client import NearDupClient, NearDupClientError
from neardup_client.cli_framework import EXIT_FAILED, EXIT_USAGE
from neardup_client.v1 import neardup_pb2 as pb
from neardup_client.v1 import neardup_pb2_grpc
from certs import issue, write_pem
from server_process import Server, serving
from textgen import article, text

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "s3cret-Token_with.punctuation~42"
RESULTS = ["a", "b", "a-copy"]  # a-copy duplicates a


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> Path:
    """ca.pem; server.pem/.key (127.0.0.1, localhost); client.pem/.key; stranger-ca.pem and stranger.pem/.key,
    a client certificate from a CA the server does not trust."""
    directory = tmp_path_factory.mktemp("pki")
    ca, stranger_ca = issue("neardup test CA"), issue("stranger CA")
    write_pem(directory, "ca", ca[0])
    write_pem(directory, "stranger-ca", stranger_ca[0])
    write_pem(directory, "server", *issue("neardup server", ca, usage=ExtendedKeyUsageOID.SERVER_AUTH, names=(
        x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1")))))
    write_pem(directory, "client", *issue("search frontend", ca, usage=ExtendedKeyUsageOID.CLIENT_AUTH))
    write_pem(directory, "stranger", *issue("intruder", stranger_ca, usage=ExtendedKeyUsageOID.CLIENT_AUTH))
    return directory


def credentials(pki: Path, ca: str = "ca", client: str | None = None) -> grpc.ChannelCredentials:
    return grpc.ssl_channel_credentials(
        root_certificates=(pki / f"{ca}.pem").read_bytes(),
        private_key=(pki / f"{client}.key").read_bytes() if client else None,
        certificate_chain=(pki / f"{client}.pem").read_bytes() if client else None)


# --- servers ------------------------------------------------------------------------------------------------------

def corpus() -> dict[str, str]:
    """The texts of the module's store (conftest.py's `store`)."""
    first, second = text(article(1)), text(article(2))
    return {"a": first, "b": second, "a-copy": first + " One more sentence here."}


def ready_over_tls(server: Server, channel_credentials: grpc.ChannelCredentials) -> Server:
    """Server.wait_ready checks health in plaintext; a TLS server is ready when the check passes over TLS."""
    with grpc.secure_channel(server.target, channel_credentials) as channel:
        status = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=60,
                                                           wait_for_ready=True).status
    assert status == health_pb2.HealthCheckResponse.SERVING
    return server


@pytest.fixture(scope="module")
def tls_server(store, pki):
    server = Server(store, "--tls-cert", str(pki / "server.pem"), "--tls-key", str(pki / "server.key"))
    try:
        yield ready_over_tls(server, credentials(pki))
    finally:
        assert server.stop() == 0


@pytest.fixture(scope="module")
def mtls_server(store, pki):
    """Mutual TLS and the token from a file: every layer on at once, as in production."""
    (pki / "token").write_text(TOKEN + "\n")
    server = Server(store, "--tls-cert", str(pki / "server.pem"), "--tls-key", str(pki / "server.key"),
                    "--tls-client-ca", str(pki / "ca.pem"), "--token-file", str(pki / "token"))
    try:
        yield ready_over_tls(server, credentials(pki, client="client"))
    finally:
        assert server.stop() == 0


@pytest.fixture(scope="module")
def token_server(store):
    """Plaintext with the token from $NEARDUP_TOKEN, as a container would pass it; no --host, so loopback."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("NEARDUP_TOKEN", TOKEN)
        with serving(store) as running:
            patch.undo()  # the server has the token from its environment; the tests' clients must not
            yield running


def assert_serves(client: NearDupClient) -> None:
    assert client.dedup(RESULTS, threshold=0.5).keep == ["a", "b"]


def refused(call) -> grpc.StatusCode:
    with pytest.raises(NearDupClientError) as raised:
        call()
    return raised.value.code


# --- TLS ----------------------------------------------------------------------------------------------------------

def test_tls_serves_a_client_that_trusts_the_ca(tls_server, pki):
    with NearDupClient(tls_server.target, timeout=10, credentials=credentials(pki)) as client:
        assert_serves(client)
        assert client.info().articles == 3
    with NearDupClient(f"localhost:{tls_server.port}", timeout=10, credentials=credentials(pki)) as client:
        assert_serves(client)  # the certificate names localhost too


def test_tls_refuses_plaintext_and_clients_that_do_not_trust_the_server(tls_server, pki):
    with NearDupClient(tls_server.target, timeout=5) as plaintext:
        assert refused(lambda: plaintext.dedup(RESULTS)) == grpc.StatusCode.UNAVAILABLE
    with NearDupClient(tls_server.target, timeout=5, credentials=credentials(pki, ca="stranger-ca")) as wary:
        assert refused(lambda: wary.dedup(RESULTS)) == grpc.StatusCode.UNAVAILABLE
    with NearDupClient(tls_server.target, timeout=10, credentials=credentials(pki)) as client:
        assert_serves(client)


def test_mtls_refuses_clients_without_a_certificate_of_the_trusted_ca(mtls_server, pki):
    for anonymous in (credentials(pki), credentials(pki, client="stranger")):
        with NearDupClient(mtls_server.target, timeout=5, credentials=anonymous, token=TOKEN) as client:
            assert refused(lambda: client.dedup(RESULTS)) == grpc.StatusCode.UNAVAILABLE
    with NearDupClient(mtls_server.target, timeout=10, credentials=credentials(pki, client="client"),
                       token=TOKEN) as client:
        assert_serves(client)
    assert "listening on 127.0.0.1" in mtls_server.log()
    assert "TLS, client certificates required, bearer token required" in mtls_server.log()


def test_mtls_still_needs_the_token(mtls_server, pki):
    with NearDupClient(mtls_server.target, timeout=10, credentials=credentials(pki, client="client")) as client:
        assert refused(lambda: client.dedup(RESULTS)) == grpc.StatusCode.UNAUTHENTICATED


# --- bearer token -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("token", [None, "wrong", TOKEN + "x", TOKEN[:-1], TOKEN.upper(), " " + TOKEN])
def test_every_rpc_needs_the_right_token(token_server, token):
    with NearDupClient(token_server.target, timeout=10, token=token) as client:
        for call in (lambda: client.dedup(RESULTS), lambda: client.info(), lambda: client.delete(["nope"]),
                     lambda: client.upsert([])):
            assert refused(call) == grpc.StatusCode.UNAUTHENTICATED
    with NearDupClient(token_server.target, timeout=10, token=TOKEN) as client:
        assert_serves(client)


def test_the_token_must_follow_the_bearer_scheme_and_garbage_is_never_decoded(token_server):
    with grpc.insecure_channel(token_server.target) as channel:
        stub = neardup_pb2_grpc.NearDupStub(channel)
        for metadata in ((("authorization", TOKEN),), (("authorization", f"Basic {TOKEN}"),),
                         (("authorization", f"bearer {TOKEN}"),), (("x-token", TOKEN),)):
            with pytest.raises(grpc.RpcError) as raised:
                stub.Info(pb.InfoRequest(), metadata=metadata, timeout=10)
            assert raised.value.code() == grpc.StatusCode.UNAUTHENTICATED
        # a malformed message without the token: refused for the token, not INVALID_ARGUMENT from the decoder
        with pytest.raises(grpc.RpcError) as raised:
            channel.unary_unary("/neardup.v1.NearDup/Dedup")(b"\xff\xff\xff", timeout=10)
        assert raised.value.code() == grpc.StatusCode.UNAUTHENTICATED
        with pytest.raises(grpc.RpcError) as raised:
            channel.unary_unary("/neardup.v1.NearDup/NoSuchMethod")(b"", timeout=10)
        assert raised.value.code() == grpc.StatusCode.UNAUTHENTICATED
        answer = stub.Dedup(pb.DedupRequest(ids=RESULTS, threshold=0.5), timeout=10,
                            metadata=(("authorization", f"Bearer {TOKEN}"),))
        assert list(answer.duplicate_of) == [-1, -1, 0]


def test_health_is_open_and_reflection_needs_the_token(token_server):
    with grpc.insecure_channel(token_server.target) as channel:
        check = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service="neardup.v1.NearDup"),
                                                          timeout=10)
        assert check.status == health_pb2.HealthCheckResponse.SERVING
        with pytest.raises(grpc.RpcError) as raised:
            ProtoReflectionDescriptorDatabase(channel).get_services()
        assert raised.value.code() == grpc.StatusCode.UNAUTHENTICATED


def test_listens_on_loopback_by_default_and_never_logs_the_token(token_server):
    log = token_server.log()
    assert f"listening on 127.0.0.1:{token_server.port} (plaintext, bearer token required)" in log
    assert TOKEN not in log


# --- the command line ---------------------------------------------------------------------------------------------

def test_cli_speaks_mtls_with_the_token_from_the_environment(mtls_server, pki, neardup, monkeypatch):
    tls = ["--tls-ca", str(pki / "ca.pem"), "--tls-cert", str(pki / "client.pem"), "--tls-key", str(pki / "client.key")]
    monkeypatch.delenv("NEARDUP_TOKEN", raising=False)
    done = neardup("dedup", "--target", mtls_server.target, *tls, "--threshold", "0.5", *RESULTS)
    assert done.returncode == EXIT_FAILED
    assert re.fullmatch(r"neardup: error: UNAUTHENTICATED: .*\n", done.stderr)
    monkeypatch.setenv("NEARDUP_TOKEN", TOKEN)
    done = neardup("dedup", "--target", mtls_server.target, *tls, "--threshold", "0.5", *RESULTS)
    assert done.returncode == 0, done.stderr
    assert '"keep": [\n    "a",\n    "b"\n  ]' in done.stdout
    done = neardup("info", "--target", mtls_server.target, *tls)
    assert done.returncode == 0 and '"articles": 3' in done.stdout


@pytest.mark.parametrize("args, code, message", [
    (["--tls-cert", "{pki}/server.pem"], EXIT_USAGE, "needs both --tls-cert and --tls-key"),
    (["--tls-client-ca", "{pki}/ca.pem"], EXIT_USAGE, "needs both --tls-cert and --tls-key"),
    (["--tls-cert", "{pki}/missing.pem", "--tls-key", "{pki}/server.key"], EXIT_FAILED, "No such file"),
    (["--tls-cert", "{pki}/server.pem", "--tls-key", "{pki}/client.key"], EXIT_FAILED,
     "not a PEM certificate chain with its"),
    (["--tls-cert", "{pki}/server.key", "--tls-key", "{pki}/server.key"], EXIT_FAILED,
     "not a PEM certificate chain with its"),
    (["--tls-cert", "{pki}/server.pem", "--tls-key", "{pki}/server.key", "--tls-client-ca", "{pki}/server.key"],
     EXIT_FAILED, "not PEM CA certificates"),
    (["--token-file", "{pki}/missing-token"], EXIT_FAILED, "cannot read --token-file"),
    (["--token-file", "{pki}/empty-token"], EXIT_FAILED, "one word of printable ASCII"),
    (["--token-file", "{pki}/spaced-token"], EXIT_FAILED, "one word of printable ASCII"),
])
def test_bad_security_options_are_one_line_at_start(pki, store, neardup, args, code, message):
    """Options that do not go together are a usage error; files that cannot be used are a failure."""
    (pki / "empty-token").write_text("\n")
    (pki / "spaced-token").write_text("two words\n")
    argv = ["serve", "--store", str(store), "--port", "0", *(a.format(pki=pki) for a in args)]
    done = neardup(*argv)
    assert done.returncode == code
    assert done.stderr.startswith("neardup: error: ") and done.stderr.count("\n") == 1, done.stderr
    assert message in done.stderr


@pytest.mark.parametrize("args, code, message", [
    (["--tls-cert", "{pki}/client.pem"], EXIT_USAGE, "--tls-cert and --tls-key go together"),
    (["--tls-ca", "{pki}/missing.pem"], EXIT_FAILED, "cannot read --tls-ca"),
])
def test_bad_client_tls_options_are_one_line(pki, tls_server, neardup, args, code, message):
    done = neardup("info", "--target", tls_server.target, *(a.format(pki=pki) for a in args))
    assert (done.returncode, done.stdout) == (code, "")
    assert done.stderr.startswith("neardup: error: ") and done.stderr.count("\n") == 1, done.stderr
    assert message in done.stderr
    done = neardup("info", "--target", tls_server.target, "--tls-ca", str(pki / "ca.pem"))
    assert done.returncode == 0, done.stderr


# --- no code from input -------------------------------------------------------------------------------------------

def test_no_pickle_eval_or_exec_in_the_server_or_client():
    """Requests and corpus lines are parsed as protobuf and JSON only; nothing turns input into code or objects."""
    pattern = re.compile(r"\b(pickle|marshal|shelve|dill|cloudpickle)\b|\b(eval|exec)\s*\(|yaml\.load\(|"
                         r"__import__\s*\(")
    offenders = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
                 for package in ("server/neardup", "client/neardup_client") for path in (ROOT / package).rglob("*.py")
                 for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                 if pattern.search(line)]
    assert not offenders, offenders
