from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Metric(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    METRIC_UNSPECIFIED: _ClassVar[Metric]
    METRIC_CONTAINMENT: _ClassVar[Metric]
    METRIC_JACCARD: _ClassVar[Metric]
    METRIC_HAMMING: _ClassVar[Metric]
    METRIC_FIELDS: _ClassVar[Metric]
    METRIC_MUTUAL: _ClassVar[Metric]

class Grouping(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    GROUPING_UNSPECIFIED: _ClassVar[Grouping]
    GROUPING_GREEDY: _ClassVar[Grouping]
    GROUPING_COMPONENTS: _ClassVar[Grouping]
    GROUPING_COMPLETE: _ClassVar[Grouping]
METRIC_UNSPECIFIED: Metric
METRIC_CONTAINMENT: Metric
METRIC_JACCARD: Metric
METRIC_HAMMING: Metric
METRIC_FIELDS: Metric
METRIC_MUTUAL: Metric
GROUPING_UNSPECIFIED: Grouping
GROUPING_GREEDY: Grouping
GROUPING_COMPONENTS: Grouping
GROUPING_COMPLETE: Grouping

class SketchConfig(_message.Message):
    __slots__ = ("unit", "k", "min_word_len", "lang", "hash", "stoplist_digest", "sketcher_version", "kind", "fields", "rules", "lang_identifier")
    UNIT_FIELD_NUMBER: _ClassVar[int]
    K_FIELD_NUMBER: _ClassVar[int]
    MIN_WORD_LEN_FIELD_NUMBER: _ClassVar[int]
    LANG_FIELD_NUMBER: _ClassVar[int]
    HASH_FIELD_NUMBER: _ClassVar[int]
    STOPLIST_DIGEST_FIELD_NUMBER: _ClassVar[int]
    SKETCHER_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    RULES_FIELD_NUMBER: _ClassVar[int]
    LANG_IDENTIFIER_FIELD_NUMBER: _ClassVar[int]
    unit: str
    k: int
    min_word_len: int
    lang: str
    hash: str
    stoplist_digest: str
    sketcher_version: int
    kind: str
    fields: _containers.RepeatedCompositeFieldContainer[FieldSpec]
    rules: _containers.RepeatedCompositeFieldContainer[Rule]
    lang_identifier: str
    def __init__(self, unit: _Optional[str] = ..., k: _Optional[int] = ..., min_word_len: _Optional[int] = ..., lang: _Optional[str] = ..., hash: _Optional[str] = ..., stoplist_digest: _Optional[str] = ..., sketcher_version: _Optional[int] = ..., kind: _Optional[str] = ..., fields: _Optional[_Iterable[_Union[FieldSpec, _Mapping]]] = ..., rules: _Optional[_Iterable[_Union[Rule, _Mapping]]] = ..., lang_identifier: _Optional[str] = ...) -> None: ...

class FieldSpec(_message.Message):
    __slots__ = ("name", "kind", "unit", "k", "weight", "precision", "normalize", "drop_words", "rule_tokens", "metric", "synonyms")
    class SynonymsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    UNIT_FIELD_NUMBER: _ClassVar[int]
    K_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    PRECISION_FIELD_NUMBER: _ClassVar[int]
    NORMALIZE_FIELD_NUMBER: _ClassVar[int]
    DROP_WORDS_FIELD_NUMBER: _ClassVar[int]
    RULE_TOKENS_FIELD_NUMBER: _ClassVar[int]
    METRIC_FIELD_NUMBER: _ClassVar[int]
    SYNONYMS_FIELD_NUMBER: _ClassVar[int]
    name: str
    kind: str
    unit: str
    k: int
    weight: float
    precision: int
    normalize: str
    drop_words: _containers.RepeatedScalarFieldContainer[str]
    rule_tokens: int
    metric: str
    synonyms: _containers.ScalarMap[str, str]
    def __init__(self, name: _Optional[str] = ..., kind: _Optional[str] = ..., unit: _Optional[str] = ..., k: _Optional[int] = ..., weight: _Optional[float] = ..., precision: _Optional[int] = ..., normalize: _Optional[str] = ..., drop_words: _Optional[_Iterable[str]] = ..., rule_tokens: _Optional[int] = ..., metric: _Optional[str] = ..., synonyms: _Optional[_Mapping[str, str]] = ...) -> None: ...

class Rule(_message.Message):
    __slots__ = ("fields",)
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    fields: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, fields: _Optional[_Iterable[str]] = ...) -> None: ...

class GeoPoint(_message.Message):
    __slots__ = ("lat", "lon")
    LAT_FIELD_NUMBER: _ClassVar[int]
    LON_FIELD_NUMBER: _ClassVar[int]
    lat: float
    lon: float
    def __init__(self, lat: _Optional[float] = ..., lon: _Optional[float] = ...) -> None: ...

class FieldValue(_message.Message):
    __slots__ = ("text", "exact", "location")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    EXACT_FIELD_NUMBER: _ClassVar[int]
    LOCATION_FIELD_NUMBER: _ClassVar[int]
    text: str
    exact: str
    location: GeoPoint
    def __init__(self, text: _Optional[str] = ..., exact: _Optional[str] = ..., location: _Optional[_Union[GeoPoint, _Mapping]] = ...) -> None: ...

class Document(_message.Message):
    __slots__ = ("id", "text", "sketch", "lang", "fields")
    class FieldsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: FieldValue
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[FieldValue, _Mapping]] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    SKETCH_FIELD_NUMBER: _ClassVar[int]
    LANG_FIELD_NUMBER: _ClassVar[int]
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    id: str
    text: str
    sketch: bytes
    lang: str
    fields: _containers.MessageMap[str, FieldValue]
    def __init__(self, id: _Optional[str] = ..., text: _Optional[str] = ..., sketch: _Optional[bytes] = ..., lang: _Optional[str] = ..., fields: _Optional[_Mapping[str, FieldValue]] = ...) -> None: ...

class DedupRequest(_message.Message):
    __slots__ = ("ids", "documents", "threshold", "metric", "grouping", "sketch_config", "tag")
    IDS_FIELD_NUMBER: _ClassVar[int]
    DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    METRIC_FIELD_NUMBER: _ClassVar[int]
    GROUPING_FIELD_NUMBER: _ClassVar[int]
    SKETCH_CONFIG_FIELD_NUMBER: _ClassVar[int]
    TAG_FIELD_NUMBER: _ClassVar[int]
    ids: _containers.RepeatedScalarFieldContainer[str]
    documents: _containers.RepeatedCompositeFieldContainer[Document]
    threshold: float
    metric: Metric
    grouping: Grouping
    sketch_config: SketchConfig
    tag: int
    def __init__(self, ids: _Optional[_Iterable[str]] = ..., documents: _Optional[_Iterable[_Union[Document, _Mapping]]] = ..., threshold: _Optional[float] = ..., metric: _Optional[_Union[Metric, str]] = ..., grouping: _Optional[_Union[Grouping, str]] = ..., sketch_config: _Optional[_Union[SketchConfig, _Mapping]] = ..., tag: _Optional[int] = ...) -> None: ...

class DedupResponse(_message.Message):
    __slots__ = ("duplicate_of", "similarity", "group", "missing", "cached", "threshold", "metric", "grouping", "tag", "error", "cluster")
    DUPLICATE_OF_FIELD_NUMBER: _ClassVar[int]
    SIMILARITY_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    MISSING_FIELD_NUMBER: _ClassVar[int]
    CACHED_FIELD_NUMBER: _ClassVar[int]
    THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    METRIC_FIELD_NUMBER: _ClassVar[int]
    GROUPING_FIELD_NUMBER: _ClassVar[int]
    TAG_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    duplicate_of: _containers.RepeatedScalarFieldContainer[int]
    similarity: _containers.RepeatedScalarFieldContainer[float]
    group: _containers.RepeatedScalarFieldContainer[int]
    missing: _containers.RepeatedScalarFieldContainer[int]
    cached: bool
    threshold: float
    metric: Metric
    grouping: Grouping
    tag: int
    error: Status
    cluster: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, duplicate_of: _Optional[_Iterable[int]] = ..., similarity: _Optional[_Iterable[float]] = ..., group: _Optional[_Iterable[int]] = ..., missing: _Optional[_Iterable[int]] = ..., cached: _Optional[bool] = ..., threshold: _Optional[float] = ..., metric: _Optional[_Union[Metric, str]] = ..., grouping: _Optional[_Union[Grouping, str]] = ..., tag: _Optional[int] = ..., error: _Optional[_Union[Status, _Mapping]] = ..., cluster: _Optional[_Iterable[int]] = ...) -> None: ...

class Status(_message.Message):
    __slots__ = ("code", "message")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    code: int
    message: str
    def __init__(self, code: _Optional[int] = ..., message: _Optional[str] = ...) -> None: ...

class UpsertRequest(_message.Message):
    __slots__ = ("documents", "sketch_config")
    DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    SKETCH_CONFIG_FIELD_NUMBER: _ClassVar[int]
    documents: _containers.RepeatedCompositeFieldContainer[Document]
    sketch_config: SketchConfig
    def __init__(self, documents: _Optional[_Iterable[_Union[Document, _Mapping]]] = ..., sketch_config: _Optional[_Union[SketchConfig, _Mapping]] = ...) -> None: ...

class UpsertResponse(_message.Message):
    __slots__ = ("upserted", "generation")
    UPSERTED_FIELD_NUMBER: _ClassVar[int]
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    upserted: int
    generation: int
    def __init__(self, upserted: _Optional[int] = ..., generation: _Optional[int] = ...) -> None: ...

class DeleteRequest(_message.Message):
    __slots__ = ("ids",)
    IDS_FIELD_NUMBER: _ClassVar[int]
    ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, ids: _Optional[_Iterable[str]] = ...) -> None: ...

class DeleteResponse(_message.Message):
    __slots__ = ("deleted", "generation")
    DELETED_FIELD_NUMBER: _ClassVar[int]
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    deleted: int
    generation: int
    def __init__(self, deleted: _Optional[int] = ..., generation: _Optional[int] = ...) -> None: ...

class InfoRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class InfoResponse(_message.Message):
    __slots__ = ("articles", "sketch_config", "version", "format_version", "generation", "stoplist_size", "max_result_set", "default_threshold", "default_metric", "default_grouping", "store", "indexed", "pair_model", "default_threshold_source", "description", "languages")
    ARTICLES_FIELD_NUMBER: _ClassVar[int]
    SKETCH_CONFIG_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    FORMAT_VERSION_FIELD_NUMBER: _ClassVar[int]
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    STOPLIST_SIZE_FIELD_NUMBER: _ClassVar[int]
    MAX_RESULT_SET_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_METRIC_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_GROUPING_FIELD_NUMBER: _ClassVar[int]
    STORE_FIELD_NUMBER: _ClassVar[int]
    INDEXED_FIELD_NUMBER: _ClassVar[int]
    PAIR_MODEL_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_THRESHOLD_SOURCE_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    LANGUAGES_FIELD_NUMBER: _ClassVar[int]
    articles: int
    sketch_config: SketchConfig
    version: str
    format_version: int
    generation: int
    stoplist_size: int
    max_result_set: int
    default_threshold: float
    default_metric: Metric
    default_grouping: Grouping
    store: str
    indexed: bool
    pair_model: str
    default_threshold_source: str
    description: str
    languages: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, articles: _Optional[int] = ..., sketch_config: _Optional[_Union[SketchConfig, _Mapping]] = ..., version: _Optional[str] = ..., format_version: _Optional[int] = ..., generation: _Optional[int] = ..., stoplist_size: _Optional[int] = ..., max_result_set: _Optional[int] = ..., default_threshold: _Optional[float] = ..., default_metric: _Optional[_Union[Metric, str]] = ..., default_grouping: _Optional[_Union[Grouping, str]] = ..., store: _Optional[str] = ..., indexed: _Optional[bool] = ..., pair_model: _Optional[str] = ..., default_threshold_source: _Optional[str] = ..., description: _Optional[str] = ..., languages: _Optional[_Iterable[str]] = ...) -> None: ...

class FindSimilarRequest(_message.Message):
    __slots__ = ("id", "document", "top_k", "threshold", "metric", "sketch_config")
    ID_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_FIELD_NUMBER: _ClassVar[int]
    TOP_K_FIELD_NUMBER: _ClassVar[int]
    THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    METRIC_FIELD_NUMBER: _ClassVar[int]
    SKETCH_CONFIG_FIELD_NUMBER: _ClassVar[int]
    id: str
    document: Document
    top_k: int
    threshold: float
    metric: Metric
    sketch_config: SketchConfig
    def __init__(self, id: _Optional[str] = ..., document: _Optional[_Union[Document, _Mapping]] = ..., top_k: _Optional[int] = ..., threshold: _Optional[float] = ..., metric: _Optional[_Union[Metric, str]] = ..., sketch_config: _Optional[_Union[SketchConfig, _Mapping]] = ...) -> None: ...

class Match(_message.Message):
    __slots__ = ("id", "similarity", "cluster")
    ID_FIELD_NUMBER: _ClassVar[int]
    SIMILARITY_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    id: str
    similarity: float
    cluster: int
    def __init__(self, id: _Optional[str] = ..., similarity: _Optional[float] = ..., cluster: _Optional[int] = ...) -> None: ...

class FindSimilarResponse(_message.Message):
    __slots__ = ("matches", "exact", "threshold", "metric", "top_k", "lang", "lang_source")
    MATCHES_FIELD_NUMBER: _ClassVar[int]
    EXACT_FIELD_NUMBER: _ClassVar[int]
    THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    METRIC_FIELD_NUMBER: _ClassVar[int]
    TOP_K_FIELD_NUMBER: _ClassVar[int]
    LANG_FIELD_NUMBER: _ClassVar[int]
    LANG_SOURCE_FIELD_NUMBER: _ClassVar[int]
    matches: _containers.RepeatedCompositeFieldContainer[Match]
    exact: bool
    threshold: float
    metric: Metric
    top_k: int
    lang: str
    lang_source: str
    def __init__(self, matches: _Optional[_Iterable[_Union[Match, _Mapping]]] = ..., exact: _Optional[bool] = ..., threshold: _Optional[float] = ..., metric: _Optional[_Union[Metric, str]] = ..., top_k: _Optional[int] = ..., lang: _Optional[str] = ..., lang_source: _Optional[str] = ...) -> None: ...

class ExplainRequest(_message.Message):
    __slots__ = ("a", "b", "threshold", "metric", "sketch_config")
    A_FIELD_NUMBER: _ClassVar[int]
    B_FIELD_NUMBER: _ClassVar[int]
    THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    METRIC_FIELD_NUMBER: _ClassVar[int]
    SKETCH_CONFIG_FIELD_NUMBER: _ClassVar[int]
    a: Document
    b: Document
    threshold: float
    metric: Metric
    sketch_config: SketchConfig
    def __init__(self, a: _Optional[_Union[Document, _Mapping]] = ..., b: _Optional[_Union[Document, _Mapping]] = ..., threshold: _Optional[float] = ..., metric: _Optional[_Union[Metric, str]] = ..., sketch_config: _Optional[_Union[SketchConfig, _Mapping]] = ...) -> None: ...

class Span(_message.Message):
    __slots__ = ("start", "end")
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    start: int
    end: int
    def __init__(self, start: _Optional[int] = ..., end: _Optional[int] = ...) -> None: ...

class ExplainedDocument(_message.Message):
    __slots__ = ("id", "has_text", "shingles", "stoplisted_shingles", "sketch_values", "compared_values", "shared", "sketch_shared", "boilerplate")
    ID_FIELD_NUMBER: _ClassVar[int]
    HAS_TEXT_FIELD_NUMBER: _ClassVar[int]
    SHINGLES_FIELD_NUMBER: _ClassVar[int]
    STOPLISTED_SHINGLES_FIELD_NUMBER: _ClassVar[int]
    SKETCH_VALUES_FIELD_NUMBER: _ClassVar[int]
    COMPARED_VALUES_FIELD_NUMBER: _ClassVar[int]
    SHARED_FIELD_NUMBER: _ClassVar[int]
    SKETCH_SHARED_FIELD_NUMBER: _ClassVar[int]
    BOILERPLATE_FIELD_NUMBER: _ClassVar[int]
    id: str
    has_text: bool
    shingles: int
    stoplisted_shingles: int
    sketch_values: int
    compared_values: int
    shared: _containers.RepeatedCompositeFieldContainer[Span]
    sketch_shared: _containers.RepeatedCompositeFieldContainer[Span]
    boilerplate: _containers.RepeatedCompositeFieldContainer[Span]
    def __init__(self, id: _Optional[str] = ..., has_text: _Optional[bool] = ..., shingles: _Optional[int] = ..., stoplisted_shingles: _Optional[int] = ..., sketch_values: _Optional[int] = ..., compared_values: _Optional[int] = ..., shared: _Optional[_Iterable[_Union[Span, _Mapping]]] = ..., sketch_shared: _Optional[_Iterable[_Union[Span, _Mapping]]] = ..., boilerplate: _Optional[_Iterable[_Union[Span, _Mapping]]] = ...) -> None: ...

class ExplainResponse(_message.Message):
    __slots__ = ("similarity", "duplicate", "threshold", "metric", "a", "b", "shared_shingles", "shared_sketch_values", "note", "fields")
    SIMILARITY_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    METRIC_FIELD_NUMBER: _ClassVar[int]
    A_FIELD_NUMBER: _ClassVar[int]
    B_FIELD_NUMBER: _ClassVar[int]
    SHARED_SHINGLES_FIELD_NUMBER: _ClassVar[int]
    SHARED_SKETCH_VALUES_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    similarity: float
    duplicate: bool
    threshold: float
    metric: Metric
    a: ExplainedDocument
    b: ExplainedDocument
    shared_shingles: int
    shared_sketch_values: int
    note: str
    fields: _containers.RepeatedCompositeFieldContainer[FieldComparison]
    def __init__(self, similarity: _Optional[float] = ..., duplicate: _Optional[bool] = ..., threshold: _Optional[float] = ..., metric: _Optional[_Union[Metric, str]] = ..., a: _Optional[_Union[ExplainedDocument, _Mapping]] = ..., b: _Optional[_Union[ExplainedDocument, _Mapping]] = ..., shared_shingles: _Optional[int] = ..., shared_sketch_values: _Optional[int] = ..., note: _Optional[str] = ..., fields: _Optional[_Iterable[_Union[FieldComparison, _Mapping]]] = ...) -> None: ...

class FieldComparison(_message.Message):
    __slots__ = ("name", "kind", "weight", "similarity")
    NAME_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    SIMILARITY_FIELD_NUMBER: _ClassVar[int]
    name: str
    kind: str
    weight: float
    similarity: float
    def __init__(self, name: _Optional[str] = ..., kind: _Optional[str] = ..., weight: _Optional[float] = ..., similarity: _Optional[float] = ...) -> None: ...
