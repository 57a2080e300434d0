"""The web page's HTTP server: the static files and a JSON API that calls the gRPC server through the Python client
(the page's only way to the server), with the label session (ui/labels.py) and the --store/--corpus reads beside it.

The page has no login of its own, so on loopback it answers only requests addressed to a loopback host name and
takes POST bodies only as application/json (no CORS preflight is ever allowed).
The routes, their bodies and answers, and why: docs/ui.md ("The JSON API").
"""
from __future__ import annotations

import dataclasses
import ipaddress
import json
import logging
import socket
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from urllib.parse import parse_qs, urlsplit

import grpc
from neardup_client import Document, NearDupClient, NearDupClientError, unreachable
from neardup_client.enums import GROUPINGS
from neardup_client.json_lines import parse_line

from ..core.errors import InvalidArgument, NearDupError
from ..core.sketch_config import SketchConfig
from ..core.vocabulary import KIND_METRICS
from .clusters import DEFAULT_MEMBERS, StoreClusters
from .corpus import Corpus, field_rows
from .labels import LabelsUnavailable, NotWritten, Stale, StoreLabels

log = logging.getLogger("neardup.ui")

STATIC_FILES = {"index.html": "text/html", "app.js": "text/javascript", "style.css": "text/css"}
#: The largest request body read (pasted result sets with their texts).
MAX_BODY_BYTES = 32 * 1024 * 1024
HTTP_STATUS = {
    grpc.StatusCode.INVALID_ARGUMENT: HTTPStatus.BAD_REQUEST,
    grpc.StatusCode.NOT_FOUND: HTTPStatus.NOT_FOUND,
    grpc.StatusCode.FAILED_PRECONDITION: HTTPStatus.PRECONDITION_FAILED,
    grpc.StatusCode.RESOURCE_EXHAUSTED: HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
    grpc.StatusCode.UNAUTHENTICATED: HTTPStatus.UNAUTHORIZED,
    grpc.StatusCode.PERMISSION_DENIED: HTTPStatus.FORBIDDEN,
    grpc.StatusCode.UNAVAILABLE: HTTPStatus.SERVICE_UNAVAILABLE,
    grpc.StatusCode.DEADLINE_EXCEEDED: HTTPStatus.GATEWAY_TIMEOUT,
}
_LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1"}
#: The clusters listed when a request does not say, and the most a request may ask for.
DEFAULT_TOP, MAX_TOP, MAX_MEMBERS = 20, 1000, 10_000
#: The most titles one request asks for (a result set's ids, a cluster's members).
MAX_TITLES = 10_000


class BadRequest(Exception):
    """A request body this API cannot read; the message says what is wrong."""


class NotAvailable(Exception):
    """What this page cannot answer as it was started (clusters without --store); the message says how to."""


def _static(name: str) -> bytes:
    return resources.files(__package__).joinpath("static", name).read_bytes()


def _number(body: dict, name: str, kind=float):
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float) if kind is float else int):
        raise BadRequest(f"{name} must be a {'number' if kind is float else 'whole number'}, got {value!r}")
    return kind(value)


def _string(body: dict, name: str, where: str = "") -> str | None:
    value = body.get(name)
    if value is not None and not isinstance(value, str):
        raise BadRequest(f"{where}{name} must be a string, got {type(value).__name__}")
    return value


def _document(value, where: str) -> str | Document:
    """A stored id ({id} or a plain string) or a document with text."""
    if isinstance(value, str):
        return value
    if not isinstance(value, dict):
        raise BadRequest(f"{where} must be an object with an id and optional text and lang")
    doc_id = _string(value, "id", f"{where}.") or ""
    text, lang = _string(value, "text", f"{where}."), _string(value, "lang", f"{where}.")
    if text is None:
        return doc_id
    return Document(doc_id, text=text, lang=lang or None)


def _parameters(body: dict, *names: str) -> dict:
    parameters = {"threshold": _number(body, "threshold"), "metric": _string(body, "metric"),
                  "grouping": _string(body, "grouping"), "top_k": _number(body, "top_k", int)}
    return {name: parameters[name] for name in names if parameters[name] is not None}


class Api:
    """The JSON API's operations on one client; each takes the parsed body and returns what to answer."""

    def __init__(self, client: NearDupClient, clusters: StoreClusters | None = None,
                 labels: StoreLabels | None = None, corpus: Corpus | None = None):
        self.client = client
        self.clusters = clusters
        self.labels = labels
        self.corpus = corpus

    def info(self, _body: dict) -> dict:
        """Info, with the metrics the store's sketch kind answers and the groupings, for the page's choices, and
        the --corpus the page reads titles, texts and fields from (null without)."""
        info = dataclasses.asdict(self.client.info())
        if not info["description"]:  # a server made before descriptions: the same words, from its configuration
            info["description"] = _described(info["sketch_config"])
        return {**info, "metrics": list(KIND_METRICS.get(info["sketch_config"]["kind"], ())),
                "groupings": list(GROUPINGS), "corpus": None if self.corpus is None else self.corpus.path}

    def titles(self, body: dict) -> dict:
        """{ids}: a title for each id --corpus has a record of ({id: title}; none without --corpus)."""
        ids = body.get("ids")
        if not isinstance(ids, list) or not all(isinstance(doc_id, str) for doc_id in ids):
            raise BadRequest("ids must be a list of strings")
        if len(ids) > MAX_TITLES:
            raise BadRequest(f"ask for at most {MAX_TITLES} titles at once, got {len(ids)}")
        if self.corpus is None:
            return {"corpus": None, "titles": {}}
        titles = {doc_id: self.corpus.title(doc_id) for doc_id in dict.fromkeys(ids)}
        return {"corpus": self.corpus.path, "titles": {key: value for key, value in titles.items() if value}}

    def json_line(self, body: dict) -> dict:
        """What is wrong with one line of JSON Lines, in the command line's words (neardup_client.json_lines)."""
        line = body.get("line")
        if not isinstance(line, str):
            raise BadRequest("send {\"line\": the line as a string}")
        try:
            parse_line(line)
        except ValueError as error:
            return {"problem": str(error)}
        return {"problem": None}

    def dedup(self, body: dict) -> dict:
        ids, documents = body.get("ids"), body.get("documents")
        if (ids is None) == (documents is None):
            raise BadRequest("give ids or documents")
        if ids is not None:
            if not isinstance(ids, list) or not all(isinstance(doc_id, str) for doc_id in ids):
                raise BadRequest("ids must be a list of strings")
            results = ids
        else:
            if not isinstance(documents, list):
                raise BadRequest("documents must be a list")
            results = [_document(doc, f"documents[{position}]") for position, doc in enumerate(documents)]
            results = [Document(doc) if isinstance(doc, str) else doc for doc in results]
        answer = self.client.dedup(results, **_parameters(body, "threshold", "metric", "grouping"))
        return {"ids": list(answer.ids), "duplicate_of": list(answer.duplicate_of),
                "similarity": list(answer.similarity), "group": list(answer.group),
                "missing_positions": list(answer.missing_positions), **answer.to_dict()}

    def explain(self, body: dict) -> dict:
        """Explain's answer, with the texts it was asked with ({a, b}: sent by the page, or a stored id's read from
        --corpus; null where none) for the page to highlight; an items pair's fields with the records' values from
        --corpus (corpus.field_rows, as the label view shows a pair)."""
        for name in ("a", "b"):
            if name not in body:
                raise BadRequest(f"give documents a and b: {name} is missing")
        docs = [self._with_text(_document(body[name], name)) for name in ("a", "b")]
        answer = self.client.explain(*docs, **_parameters(body, "threshold", "metric"))
        shown = answer.to_dict()
        shown["texts"] = {name: doc.text if isinstance(doc, Document) else None for name, doc in zip("ab", docs)}
        if answer.fields:
            values = [self.corpus.fields(answer_side.id) if self.corpus is not None else None
                      for answer_side in (answer.a, answer.b)]
            shown["fields"] = field_rows({field.name: field.similarity for field in answer.fields}, *values,
                                         weights={field.name: field.weight for field in answer.fields})
            shown["found"] = {name: value is not None for name, value in zip("ab", values)}
        return shown

    def _with_text(self, doc: str | Document) -> str | Document:
        """A stored id with its text from --corpus, when it has one (so the page shows the passages)."""
        if isinstance(doc, Document) or self.corpus is None:
            return doc
        record = self.corpus.text(doc)
        return doc if record is None else Document(doc, text=record["text"], lang=record.get("lang"))

    def similar(self, body: dict) -> dict:
        doc_id, text = _string(body, "id"), _string(body, "text")
        if (doc_id is None) == (text is None):
            raise BadRequest("give an id or a text")
        query = {"id": doc_id} if doc_id is not None else {
            "document": Document("", text=text, lang=_string(body, "lang") or None)}
        return self.client.find_similar(**query, **_parameters(body, "top_k", "threshold", "metric")).to_dict()

    def clusters_view(self, query: dict) -> dict:
        """The largest clusters (?top, ?members), or the cluster of one id (?id), read from the --store store."""
        members = _whole(query, "members", DEFAULT_MEMBERS, MAX_MEMBERS)
        doc_id = query.get("id")
        if self.clusters is None:
            if doc_id is not None:
                raise NotAvailable("this page was started without --store: start `neardup ui` with --store LOCATION "
                                   "(the server's store) to find clusters")
            return {"store": None, "clustered": False}
        if doc_id is not None:
            return self.clusters.find(doc_id, members)
        return self.clusters.summary(_whole(query, "top", DEFAULT_TOP, MAX_TOP), members)

    def _labels(self) -> StoreLabels:
        if self.labels is None:
            raise NotAvailable("this page was started without --labels: start `neardup ui` with --store LOCATION "
                               "(the server's store) --labels PAIRS (the answers file) to label pairs, and --corpus "
                               "JSONL to see the texts or the records' fields")
        return self.labels

    def label_view(self, _query: dict) -> dict:
        """The pair `neardup label`'s session proposes now, and the counts."""
        return self._labels().view()

    def label_answer(self, body: dict) -> dict:
        """{a, b, duplicate}: the answer to the pair proposed now, appended to the answers file."""
        labels = self._labels()
        a, b = _string(body, "a"), _string(body, "b")
        if a is None or b is None:
            raise BadRequest("give the pair answered: a and b, its ids")
        if "duplicate" not in body or not isinstance(body["duplicate"], (bool, type(None))):
            raise BadRequest("give duplicate: true, false or null (unsure)")
        return labels.answer(a, b, body["duplicate"])

    def label_undo(self, _body: dict) -> dict:
        return self._labels().undo()


def _described(sketch_config: dict) -> str:
    """SketchConfig.describe of Info's sketch_config (a server that sends no description), or its kind when this
    code cannot read it."""
    try:
        return SketchConfig.from_dict(sketch_config).describe()
    except (NearDupError, TypeError, ValueError):
        return sketch_config.get("kind", "")


def _whole(query: dict, name: str, default: int, largest: int) -> int:
    value = query.get(name)
    if value is None:
        return default
    if not (value.isascii() and value.isdigit()) or not 1 <= int(value) <= largest:
        raise BadRequest(f"{name} must be a whole number from 1 to {largest}, got {value!r}")
    return int(value)


ROUTES = {("GET", "/api/info"): "info", ("POST", "/api/dedup"): "dedup", ("POST", "/api/explain"): "explain",
          ("POST", "/api/similar"): "similar", ("GET", "/api/clusters"): "clusters_view",
          ("GET", "/api/label"): "label_view", ("POST", "/api/label"): "label_answer",
          ("POST", "/api/label/undo"): "label_undo", ("POST", "/api/json-line"): "json_line",
          ("POST", "/api/titles"): "titles"}


class Handler(BaseHTTPRequestHandler):
    server: "UiServer"
    protocol_version = "HTTP/1.1"
    server_version = "neardup-ui"

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def _handle(self, method: str) -> None:
        if not self.server.host_allowed(self.headers.get("Host", "")):
            self._error(HTTPStatus.FORBIDDEN, "FORBIDDEN", "this page answers requests to its loopback address only")
            return
        url = urlsplit(self.path)
        path = url.path
        if method == "GET" and (path == "/" or path.startswith("/static/")):
            name = "index.html" if path == "/" else path.removeprefix("/static/")
            if name not in STATIC_FILES:
                self._error(HTTPStatus.NOT_FOUND, "NOT_FOUND", f"no such file: {path}")
                return
            self._send(HTTPStatus.OK, _static(name), f"{STATIC_FILES[name]}; charset=utf-8")
            return
        operation = ROUTES.get((method, path))
        if operation is None:
            known = {route_path for _, route_path in ROUTES}
            self._error(HTTPStatus.METHOD_NOT_ALLOWED if path in known else HTTPStatus.NOT_FOUND, "NOT_FOUND",
                        f"no {method} {path}; the API is {', '.join(f'{m} {p}' for m, p in ROUTES)}")
            return
        try:
            # a GET's parameters are its query's (the last of a repeated name)
            body = self._body() if method == "POST" else {name: values[-1] for name, values in
                                                          parse_qs(url.query, keep_blank_values=True).items()}
            answer = getattr(self.server.api, operation)(body)
        except BadRequest as error:
            self._error(HTTPStatus.BAD_REQUEST, "BAD_REQUEST", str(error))
        except (NotAvailable, LabelsUnavailable) as error:
            self._error(HTTPStatus.PRECONDITION_FAILED, "FAILED_PRECONDITION", str(error))
        except Stale as error:
            self._error(HTTPStatus.CONFLICT, "ABORTED", str(error))
        except NotWritten as error:
            self._error(HTTPStatus.SERVICE_UNAVAILABLE, "UNAVAILABLE", str(error))
        except NearDupClientError as error:  # an unreachable server with the likely cause, as the commands say it
            self._error(HTTP_STATUS.get(error.code, HTTPStatus.BAD_GATEWAY), error.code.name,
                        unreachable(error.details, self.server.api.client.target)
                        if error.code == grpc.StatusCode.UNAVAILABLE else error.details)
        except InvalidArgument as error:  # the --store store's check of an id (an overlong one)
            self._error(HTTPStatus.BAD_REQUEST, "INVALID_ARGUMENT", str(error))
        except NearDupError as error:  # the --store store cannot be read now (a Redis server down)
            self._error(HTTPStatus.SERVICE_UNAVAILABLE, "UNAVAILABLE", str(error))
        except ValueError as error:  # the client's own checks (an unknown metric name)
            self._error(HTTPStatus.BAD_REQUEST, "INVALID_ARGUMENT", str(error))
        except Exception:  # noqa: BLE001 (a bug: the page says so, the log has the traceback)
            log.exception("internal error in %s %s", method, path)
            self._error(HTTPStatus.INTERNAL_SERVER_ERROR, "INTERNAL", "internal error; see the log of neardup ui")
        else:
            self._send(HTTPStatus.OK, json.dumps(answer, ensure_ascii=False).encode("utf-8"),
                       "application/json; charset=utf-8")

    def _body(self) -> dict:
        if self.headers.get_content_type() != "application/json":
            raise BadRequest("send the request body as application/json")
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            raise BadRequest("a request body needs its Content-Length") from None
        if not 0 <= length <= MAX_BODY_BYTES:
            raise BadRequest(f"the request body is over {MAX_BODY_BYTES} bytes")
        try:
            body = json.loads(self.rfile.read(length).decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as error:
            raise BadRequest(f"the request body is not JSON: {error}") from None
        if not isinstance(body, dict):
            raise BadRequest("the request body must be a JSON object")
        return body

    def _error(self, status: HTTPStatus, code: str, message: str) -> None:
        self._send(status, json.dumps({"error": {"code": code, "message": message}}, ensure_ascii=False)
                   .encode("utf-8"), "application/json; charset=utf-8")

    def _send(self, status: HTTPStatus, data: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Content-Security-Policy", "default-src 'self'")
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args) -> None:  # noqa: A002 (BaseHTTPRequestHandler's name)
        log.info("%s %s", self.address_string(), format % args)


class UiServer(ThreadingHTTPServer):
    """The page and its API on (host, port), calling the gRPC server through `client`; `clusters`: the store's
    clusters (`neardup ui --store`), or None; `labels`: the labelling session (`--labels`), or None."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, host: str, port: int, client: NearDupClient, clusters: StoreClusters | None = None,
                 labels: StoreLabels | None = None, corpus: Corpus | None = None):
        self.address_family = _family(host)
        super().__init__((host, port), Handler)
        self.api = Api(client, clusters, labels, corpus)
        self.loopback_only = _is_loopback(host)

    def host_allowed(self, host_header: str) -> bool:
        """Whether a request's Host names this server: any host when it listens beyond loopback, else a loopback
        name or address (with or without a port)."""
        if not self.loopback_only:
            return True
        name = urlsplit(f"//{host_header}").hostname or ""
        return name in _LOOPBACK_NAMES or _is_loopback(name)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{f'[{host}]' if ':' in host else host}:{port}/"


def _family(host: str) -> socket.AddressFamily:
    try:
        return socket.AF_INET6 if ipaddress.ip_address(host).version == 6 else socket.AF_INET
    except ValueError:
        return socket.AF_INET


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"
