"""Golden values: the exact sketches that this neardup makes of a few short texts per language and unit.

A store keeps sketches, not texts, and compares every new sketch with the stored ones. A sketch value that
changes for the same text and configuration — an NLTK upgrade that moves a Punkt sentence break or a Snowball
stem, another CRC-32 implementation, a change in the normalization — would compare new sketches with old ones
under different rules, silently. If this test fails after a dependency upgrade or a change, either restore the
old values (pin the dependency, undo the change), or bump SKETCHER_VERSION in server/neardup/core/sketch.py and
regenerate the literals (`PYTHONPATH=tests python tests/core/test_sketch_golden.py` prints them; set GOLDEN_VERSION
to the new version), so that stores made under the old rules are refused instead of misread. The rest of the file checks that refusal:
in the store, on the command line and over gRPC.
"""
from __future__ import annotations

import hashlib
import json
import textwrap
from pathlib import Path

import grpc
import lmdb
import pytest

from neardup.core.sketch_config import SketchConfig, SKETCHER_VERSION
from neardup.core.sketcher import Sketcher
from neardup.core.encoding import decode_sketch, encode_sketch
from neardup.core.errors import ConfigMismatch, InvalidArgument, StoreUnavailable
from neardup.store import create_store, open_store
from neardup_client.v1 import neardup_pb2 as pb
from neardup_client.v1 import neardup_pb2_grpc
from neardup_client.cli_framework import EXIT_FAILED
from server_process import run_neardup, serving, sketch_store, write_jsonl

#: The sketcher version the literals below were made by.
GOLDEN_VERSION = 2
K = 16
UNITS = ("sentence", "para-sentence", "word:3", "word:5")
MIN_WORD_LENS = (1, 3)

# Short texts with what moves sentence breaks and stems: abbreviations, initials, ordinals, decimal numbers,
# quotes of several kinds, an ellipsis, a heading without a final stop, letters outside ASCII.
TEXTS = {
    "english": ('Dr. Smith met Mr. Jones at 3.30 p.m. on Jan. 5, 2024, in St. Louis.\n\nBREAKING NEWS\n\n'
                '"We won\'t sell," he said. The U.S. firm paid $1.5 million (about €1.4m) for 12,000 shares! '
                'Was it worth it? Prof. Lee, e.g., doubts it... Sales rose 4.5% vs. last year.'),
    "dutch": ('Dhr. Jansen woont in Amsterdam, bijv. aan de Keizersgracht nr. 12.\n\nNieuws uit de regio\n\n'
              'De gemeenteraad besloot gisteren dat de bruggen worden vernieuwd. Volgens mevr. De Vries kost '
              'dat ca. 3,5 miljoen euro. „Het is hoog tijd,” zei zij.'),
    "german": ('Dr. Müller wohnt in der Goethestr. 5 in München, d.h. nahe dem Zentrum.\n\nAus der Stadt\n\n'
               'Die Straßenbahn fährt ab dem 1. März häufiger. Das kostet z.B. 2,5 Mio. Euro pro Jahr. '
               '„Wir freuen uns“, sagte die Sprecherin.'),
    "russian": ('Проф. Иванов живёт в г. Москве, ул. Тверская, д. 7.\n\nНовости города\n\n'
                'Вчера городской совет принял новый бюджет на 2025 год. Расходы на транспорт выросли на 12%, '
                'т.е. почти на миллиард рублей. «Это хорошее решение», — сказал мэр.'),
    # no stemmer: words are only lowercased
    "none": ('Zażółć gęślą jaźń!\n\nPchnąć w tę łódź jeża lub ośm skrzyń fig. Running runners ran QUICKLY; '
             'the 2 foxes jumped.'),
}

# Sketch values (uint32, ascending) by (language, unit, min_word_len), at K = 16.
SKETCHES = {
    ('english', 'sentence', 1): [265585962, 1723533954, 2321981772, 2797784775, 2861812465, 3411964910],
    ('english', 'sentence', 3): [1968279927, 2802784969, 3056698615, 3138415407, 3208440544, 3277776699],
    ('english', 'para-sentence', 1): [
        265585962, 1723533954, 2077053485, 2321981772, 2797784775, 3261212727, 3411964910
    ],
    ('english', 'para-sentence', 3): [
        1968279927, 2802784969, 2993765752, 3056698615, 3208440544, 3261212727, 3277776699
    ],
    ('english', 'word:3', 1): [
        28153179, 187311203, 223334477, 267233193, 423192106, 466538225, 492365101, 519416252, 599358872, 672989570,
        738686027, 801944327, 1131425369, 1164949533, 1638573777, 1698021013
    ],
    ('english', 'word:3', 3): [
        133347028, 473601208, 791650306, 803992738, 815874654, 1067450646, 1292595115, 1482519240, 1678822860,
        1722876063, 1880969325, 1968279927, 2115092273, 2162520681, 2218683013, 2441648886
    ],
    ('english', 'word:5', 1): [
        334776724, 385909006, 491726492, 494229790, 834663282, 855245307, 971639647, 977583978, 1000830639,
        1056109152, 1155397571, 1156299333, 1171552418, 1385283488, 1450613566, 1477698744
    ],
    ('english', 'word:5', 3): [
        28686693, 129602999, 419294480, 424952486, 481932982, 757141811, 813221376, 1076711400, 1122930736,
        1173728754, 1372297968, 1387047529, 1976186783, 2095541480, 2113314976, 2220893411
    ],
    ('dutch', 'sentence', 1): [299954188, 536452622, 864250661, 3024664113],
    ('dutch', 'sentence', 3): [1409485675, 1589608805, 2596455983, 3484032334],
    ('dutch', 'para-sentence', 1): [173102256, 299954188, 536452622, 2145181009, 3024664113],
    ('dutch', 'para-sentence', 3): [309977773, 1409485675, 1589608805, 2596455983, 2889874441],
    ('dutch', 'word:3', 1): [
        20204678, 63427461, 132311780, 191707318, 446015266, 453729680, 758377662, 813392023, 877320662, 992432778,
        1221267214, 1443975643, 1516894830, 1549983951, 1613761263, 1747100674
    ],
    ('dutch', 'word:3', 3): [
        20204678, 43112354, 191707318, 574583236, 758377662, 934566444, 1261026380, 1549983951, 1712687125,
        1747100674, 2171720990, 2558931773, 2566722342, 2653227388, 2702976792, 2802289116
    ],
    ('dutch', 'word:5', 1): [
        156439297, 358406238, 574262666, 739728983, 853959973, 862150979, 1020634195, 1281640750, 1357202511,
        1373536923, 1751796986, 1932200185, 2012249876, 2043154794, 2236969224, 2427424572
    ],
    ('dutch', 'word:5', 3): [
        195013123, 253836467, 335283553, 426536989, 960809280, 1200783504, 1352924337, 1409485675, 1751796986,
        1969545970, 2040286279, 2173655571, 2246893377, 2255903482, 2635694572, 2772083689
    ],
    ('german', 'sentence', 1): [32271270, 1165453969, 3005172952, 3231779322, 3577563881, 3753718429, 4087606475],
    ('german', 'sentence', 3): [262600392, 843411972, 1165453969, 2336579209, 3398864351, 3577563881, 3753718429],
    ('german', 'para-sentence', 1): [
        32271270, 1165453969, 2132042372, 3005172952, 3577563881, 3753718429, 3900254617, 4087606475
    ],
    ('german', 'para-sentence', 3): [
        258868850, 262600392, 843411972, 1165453969, 2336579209, 3577563881, 3753718429, 3900254617
    ],
    ('german', 'word:3', 1): [
        196633532, 249727547, 428449824, 482625353, 526732257, 554451278, 715591865, 828965375, 840825161,
        843933152, 1112805325, 1162777156, 1165453969, 1173488303, 1261064296, 1436264036
    ],
    ('german', 'word:3', 3): [
        196633532, 249727547, 262600392, 513214527, 554451278, 656218648, 715591865, 828965375, 1112805325,
        1115271008, 1165453969, 1261064296, 1451629338, 1547200039, 2851852527, 2871764312
    ],
    ('german', 'word:5', 1): [
        317163846, 494282615, 606018914, 897409271, 901573250, 929971409, 964853329, 1004176730, 1197135403,
        1244261861, 1259147035, 1357515539, 1567787194, 1625576173, 1797959406, 1807508586
    ],
    ('german', 'word:5', 3): [
        409305452, 494282615, 588984266, 625321964, 897409271, 901573250, 931880412, 1197135403, 1238090512,
        1244261861, 1378904035, 1467685035, 1714252154, 1807508586, 1825860691, 3024301108
    ],
    ('russian', 'sentence', 1): [1192353847, 1790921346, 2002956883, 2236727443, 3015154013],
    ('russian', 'sentence', 3): [256507669, 891946699, 924613781, 3015154013],
    ('russian', 'para-sentence', 1): [146742996, 1192353847, 1765416953, 1790921346, 2002956883, 3015154013],
    ('russian', 'para-sentence', 3): [146742996, 256507669, 924613781, 2009077857, 3015154013],
    ('russian', 'word:3', 1): [
        229924033, 253442957, 423122422, 451646242, 696735136, 736730410, 927105692, 1019653633, 1104088529,
        1110497705, 1220918209, 1265590143, 1268781227, 1344444392, 1384797237, 1498741675
    ],
    ('russian', 'word:3', 3): [
        229924033, 253442957, 423122422, 669578527, 702733554, 748794303, 866176024, 881935612, 927105692,
        1110497705, 1171983029, 1220918209, 1300673025, 1855299472, 2235916676, 2880505173
    ],
    ('russian', 'word:5', 1): [
        101182150, 264307528, 386448603, 503453179, 587933751, 732867617, 994024245, 1062540857, 1185638330,
        1331966964, 1417365328, 1477968396, 1712266304, 1804357902, 2133699765, 2188255774
    ],
    ('russian', 'word:5', 3): [
        256507669, 259515478, 708549618, 710587377, 861674334, 1001224333, 1087533839, 1245647343, 1331966964,
        1650325685, 1929993082, 2321576481, 2454722813, 2519768809, 2967227345, 2969481489
    ],
    ('none', 'sentence', 1): [1897490863, 2328936794, 3148535078],
    ('none', 'sentence', 3): [1694712783, 2328936794, 4008857983],
    ('none', 'para-sentence', 1): [1897490863, 2328936794, 3148535078],
    ('none', 'para-sentence', 3): [1694712783, 2328936794, 4008857983],
    ('none', 'word:3', 1): [
        51895776, 571844112, 685672032, 789241111, 849471196, 1102873641, 1220245331, 1226612477, 1305247860,
        1437719926, 1692669585, 1703119355, 2328936794, 2451030911, 3469549789, 3471151834
    ],
    ('none', 'word:3', 3): [
        571844112, 685672032, 789241111, 849471196, 1102873641, 1220245331, 1305247860, 1437719926, 1692669585,
        2222714429, 2328936794, 2628103374, 2721001645, 3411207609, 3766563640
    ],
    ('none', 'word:5', 1): [
        33075311, 240577654, 586355450, 943943655, 999533595, 1101486538, 1262488701, 1544846020, 1663273337,
        1872356715, 1977515233, 2597154299, 2774726962, 3362022729, 3552441428, 4051998631
    ],
    ('none', 'word:5', 3): [
        240577654, 410953097, 999533595, 1262488701, 1417548487, 1484780535, 1872356715, 1904308156, 1958225878,
        1977515233, 2496286940, 2597154299, 3552441428
    ],
}

# The para-sentence shingles (min_word_len 1) of the same texts: Punkt's sentence breaks and the stems.
SHINGLES = {
    'english': [
        'dr smith met mr jone at 3 30 p m',
        'on jan 5 2024 in st loui',
        'break news',
        'we won t sell he said',
        'the u s firm paid 1 5 million about 1 4m for 12 000 share',
        'was it worth it',
        'prof lee e g doubt it sale rose 4 5 vs last year',
    ],
    'dutch': [
        'dhr jans woont in amsterdam bijv aan de keizersgracht nr 12',
        'nieuw uit de regio',
        'de gemeenterad beslot gister dat de brugg word vernieuwd',
        'volgen mevr de vries kost dat ca 3 5 miljoen euro',
        'het is hog tijd zei zij',
    ],
    'german': [
        'dr mull wohnt in der goethestr',
        '5 in munch d h nah dem zentrum',
        'aus der stadt',
        'die strassenbahn fahrt ab dem 1',
        'marz haufig',
        'das kostet z b 2 5 mio',
        'euro pro jahr',
        'wir freu uns sagt die sprecherin',
    ],
    'russian': [
        'проф иван живет в г москв ул тверск д',
        '7',
        'новост город',
        'вчер городск совет приня нов бюджет на 2025 год',
        'расход на транспорт выросл на 12 т е почт на миллиард рубл',
        'эт хорош решен сказа мэр',
    ],
    'none': [
        'zażółć gęślą jaźń',
        'pchnąć w tę łódź jeża lub ośm skrzyń fig',
        'running runners ran quickly the 2 foxes jumped',
    ],
}


def golden_sketch(lang: str, unit: str, min_word_len: int) -> list[int]:
    config = SketchConfig(unit=unit, k=K, min_word_len=min_word_len, lang=lang)
    return decode_sketch(Sketcher(config).sketch(TEXTS[lang]))


def golden_shingles(lang: str) -> list[str]:
    return Sketcher(SketchConfig(unit="para-sentence", lang=lang)).shingles(TEXTS[lang])


def test_the_literals_are_of_this_sketcher_version():
    assert SKETCHER_VERSION == GOLDEN_VERSION, \
        "SKETCHER_VERSION changed: regenerate the literals (PYTHONPATH=tests python tests/core/test_sketch_golden.py), " \
        "set GOLDEN_VERSION"


@pytest.mark.parametrize("lang, unit, min_word_len", list(SKETCHES), ids=["-".join(map(str, key)) for key in SKETCHES])
def test_sketch_values_are_those_of_this_sketcher_version(lang, unit, min_word_len):
    assert golden_sketch(lang, unit, min_word_len) == SKETCHES[lang, unit, min_word_len]


@pytest.mark.parametrize("lang", list(SHINGLES))
def test_sentences_and_stems_are_those_of_this_sketcher_version(lang):
    """The same texts as readable shingles: which sentence break or stem moved, when a value above changed."""
    assert golden_shingles(lang) == SHINGLES[lang]


def test_every_language_and_unit_is_fixed():
    assert set(SKETCHES) == {(lang, unit, length) for lang in TEXTS for unit in UNITS for length in MIN_WORD_LENS}
    assert {"english", "dutch", "german", "russian", "none"} <= set(TEXTS)


def test_the_shingle_hash_is_crc32():
    """CRC-32's check value: the hash of the ASCII digits 1 to 9 is 0xCBF43926."""
    assert Sketcher(SketchConfig(unit="word:1", lang="none")).hashes("123456789") == {0xCBF43926}


# --- the version in the configuration ----------------------------------------------------------------------------

def test_a_configuration_saved_without_a_sketcher_version_is_version_1():
    saved = {key: value for key, value in SketchConfig().to_dict().items() if key != "sketcher_version"}
    assert SketchConfig.from_dict(saved).sketcher_version == 1
    assert SketchConfig.from_dict(saved) != SketchConfig()
    assert SketchConfig().sketcher_version == SKETCHER_VERSION
    assert SketchConfig.from_dict(SketchConfig().to_dict()) == SketchConfig()


@pytest.mark.parametrize("version", [0, -1, "2", 2.0, None])
def test_a_sketcher_version_is_an_integer_of_at_least_1(version):
    with pytest.raises(InvalidArgument, match="sketcher_version"):
        SketchConfig(sketcher_version=version)


def test_sketches_of_another_sketcher_version_do_not_compare():
    with pytest.raises(ConfigMismatch, match=r"sketcher_version=1 \(store: 2\); the sketches were made by another "
                                             "sketcher version and must be re-made by version 2"):
        SketchConfig().require_equal(SketchConfig(sketcher_version=1), "the request's sketch")


# --- a store made by another sketcher version ---------------------------------------------------------------------

def refusal(path: Path, version: int) -> str:
    return (f"store {path} was made by sketcher version {version}; this neardup sketches with version "
            f"{SKETCHER_VERSION}: rebuild it with `neardup index CORPUS --store NEW_STORE`")


def old_store(path: Path, version: int | None = None) -> Path:
    """A store with sketches in it, whose configuration says sketcher `version`; None writes it as neardup did
    before versions were recorded (no sketcher_version key)."""
    sketch_store(path, {"a": encode_sketch([1, 2, 3]), "b": encode_sketch([2, 3, 4])})
    config = SketchConfig().to_dict()
    if version is None:
        del config["sketcher_version"]
    else:
        config["sketcher_version"] = version
    with lmdb.open(str(path), max_dbs=3) as env, env.begin(write=True, db=env.open_db(b"meta")) as txn:
        txn.put(b"config", json.dumps(config, sort_keys=True).encode())
    return path


def digest(path: Path) -> str:
    return hashlib.sha256((path / "data.mdb").read_bytes()).hexdigest()


@pytest.mark.parametrize("version, says", [(None, 1), (1, 1), (SKETCHER_VERSION + 1, SKETCHER_VERSION + 1)])
def test_a_store_of_another_sketcher_version_is_refused_and_left_as_it_was(tmp_path, version, says):
    path = old_store(tmp_path / "store", version)
    before = digest(path)
    for readonly in (False, True):
        with pytest.raises(StoreUnavailable) as refused:
            open_store(path, readonly=readonly)
        assert str(refused.value) == refusal(path, says)
    assert digest(path) == before


def test_no_store_is_created_for_another_sketcher_version(tmp_path):
    with pytest.raises(ConfigMismatch, match="cannot create a store for sketcher version 1"):
        create_store(tmp_path / "store", SketchConfig(sketcher_version=1), [])
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
@pytest.mark.parametrize("command", [["serve", "--store", "{store}", "--port", "0"],
                                     ["index", "{corpus}", "--store", "{store}"]], ids=["serve", "index"])
def test_the_command_line_refuses_an_old_store_in_one_line(tmp_path, command):
    """`neardup serve` and `neardup index` (into the existing store) say what happened and how to rebuild, exit
    1 and change nothing. (`neardup info` asks a running server, which cannot have started on such a store.)"""
    path = old_store(tmp_path / "store")
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [{"id": "c", "text": TEXTS["english"]}])
    before = digest(path)
    done = run_neardup(*(arg.format(store=path, corpus=corpus) for arg in command))
    assert (done.returncode, done.stdout) == (EXIT_FAILED, "")
    assert done.stderr == f"neardup: error: {refusal(path, 1)}\n"
    assert digest(path) == before
    with lmdb.open(str(path), max_dbs=3, readonly=True) as env, env.begin(db=env.open_db(b"sketches")) as txn:
        assert sorted(key for key, _ in txn.cursor()) == [b"a", b"b"]


# --- requests that state a sketch configuration ------------------------------------------------------------------

@pytest.fixture(scope="module")
def server(tmp_path_factory):
    path = sketch_store(tmp_path_factory.mktemp("golden") / "store", {"a": Sketcher().sketch(TEXTS["english"])})
    with serving(path) as running:
        yield running


@pytest.fixture(scope="module")
def stub(server):
    with grpc.insecure_channel(server.target) as channel:
        yield neardup_pb2_grpc.NearDupStub(channel)


def stated(stub, version: int) -> pb.SketchConfig:
    """The server's configuration, with another sketcher_version (0: unset, as a client older than the field)."""
    config = pb.SketchConfig()
    config.CopyFrom(stub.Info(pb.InfoRequest(), timeout=10).sketch_config)
    config.sketcher_version = version
    return config


def test_the_server_states_its_sketcher_version(stub):
    assert stub.Info(pb.InfoRequest(), timeout=10).sketch_config.sketcher_version == SKETCHER_VERSION


@pytest.mark.parametrize("method", ["Dedup", "Upsert"])
@pytest.mark.parametrize("version", [0, 1, SKETCHER_VERSION + 1])
def test_sketches_of_another_sketcher_version_are_refused(stub, method, version):
    sketch = Sketcher(SketchConfig()).sketch(TEXTS["german"])
    documents = [pb.Document(id="new", sketch=sketch), pb.Document(id="a")]
    message = pb.DedupRequest if method == "Dedup" else pb.UpsertRequest
    with pytest.raises(grpc.RpcError) as refused:
        getattr(stub, method)(message(documents=documents[:1], sketch_config=stated(stub, version)), timeout=10)
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert (f"sketcher_version={version or 1} (store: {SKETCHER_VERSION}); the sketches were made by another "
            f"sketcher version and must be re-made by version {SKETCHER_VERSION}") in refused.value.details()
    answer = stub.Dedup(pb.DedupRequest(documents=documents, sketch_config=stated(stub, SKETCHER_VERSION)),
                        timeout=10)
    assert list(answer.missing) == []  # "a" is still stored
    assert list(stub.Dedup(pb.DedupRequest(ids=["new"]), timeout=10).missing) == [0]  # nothing was written


def _print_literals() -> None:
    """Prints SKETCHES and SHINGLES as the current code makes them, to paste above after bumping SKETCHER_VERSION."""
    print("SKETCHES = {")
    for lang in TEXTS:
        for unit in UNITS:
            for min_word_len in MIN_WORD_LENS:
                key = f"    ({lang!r}, {unit!r}, {min_word_len}): ["
                values = ", ".join(map(str, golden_sketch(lang, unit, min_word_len)))
                if len(key) + len(values) <= 114:
                    print(f"{key}{values}],")
                else:
                    print(key)
                    print(textwrap.fill(values, 116, initial_indent=" " * 8, subsequent_indent=" " * 8))
                    print("    ],")
    print("}")
    print("SHINGLES = {")
    for lang in TEXTS:
        print(f"    {lang!r}: [")
        for shingle in golden_shingles(lang):
            print(f"        {shingle!r},")
        print("    ],")
    print("}")


if __name__ == "__main__":
    _print_literals()
