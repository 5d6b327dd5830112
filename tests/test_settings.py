"""The switch registry (`ren.settings`, issue 16): every switch declares its allowed values, and
a value outside them — from the environment or from `settings.override` — is a SettingsError
naming the range, raised where the value is read (REN_CPU_THREADS=100000 used to kill the
process with SIGSEGV inside libgomp)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

import ren
from ren import settings
from ren.errors import ParameterError, RenError, SettingsError

REPO = os.path.dirname(os.path.dirname(os.path.abspath(ren.__file__)))

#: a value below and above each int switch's range (a path switch has no such values)
OUT_OF_RANGE = {
    "REN_DEBUG": (-1, 4),
    "REN_CHECK": (-1, 2),
    "REN_NO_MEMPLAN": (-1, 2),
    "REN_NO_ELISION": (-1, 2),
    "REN_JIT": (-1, 2),
    "REN_PY_CORE": (-1, 2),
    "REN_PLAN_CACHE": (-1, 2),
    "REN_DEVICE_SAMPLING": (-1, 2),
    "REN_INSPECT_DEBUG": (-1, 2),
    "REN_MALLOC_TUNE": (-1, 2),
    "REN_CPU_THREADS": (0, 100000),
    "REN_CPU_LIBRARIES": (0, 10**9),
    "REN_DISTRIBUTED_SHM_MIN_BYTES": (-1, 1 << 40),
    "REN_MEMORY_ORDER": (-1, 2),
    "REN_COMPILE_SPLIT_BYTES": (-1, 1 << 40),
}


def test_every_switch_declares_its_allowed_values():
    for s in settings.SWITCHES.values():
        if s.is_path:
            assert isinstance(s.default, str), s
            continue
        if s.is_choice:
            assert isinstance(s.allowed, tuple) and len(s.allowed) >= 2, s
            assert all(isinstance(v, str) for v in s.allowed) and s.default in s.allowed, s
            continue
        assert isinstance(s.allowed, range) and len(s.allowed) >= 2, s
        assert s.default in s.allowed, s
    assert set(OUT_OF_RANGE) == {s.name for s in settings.SWITCHES.values()
                                 if not s.is_path and not s.is_choice}
    assert settings.SWITCHES["REN_CACHE_DIR"].is_path
    assert settings.SWITCHES["REN_CPU_ISA"].is_choice


def test_the_cpu_isa_is_a_choice_switch(monkeypatch):
    """REN_CPU_ISA takes auto|avx512|avx2|scalar (any case in the environment); anything else
    is a SettingsError naming the choices, from the environment and from override alike."""
    s = settings.SWITCHES["REN_CPU_ISA"]
    assert s.allowed == ("auto", "avx512", "avx2", "scalar") and s.default == "auto"
    monkeypatch.delenv("REN_CPU_ISA", raising=False)
    assert settings._read_env("REN_CPU_ISA") == "auto"
    for raw, want in (("avx2", "avx2"), (" AVX512 ", "avx512"), ("scalar", "scalar")):
        monkeypatch.setenv("REN_CPU_ISA", raw)
        assert settings._read_env("REN_CPU_ISA") == want
    for bad in ("avx", "sse4", "1"):
        monkeypatch.setenv("REN_CPU_ISA", bad)
        with pytest.raises(SettingsError, match=r"REN_CPU_ISA=.* is not allowed.*one of "
                                                r"auto\|avx512\|avx2\|scalar"):
            settings._read_env("REN_CPU_ISA")
    monkeypatch.delenv("REN_CPU_ISA")
    with settings.override(REN_CPU_ISA="scalar"):
        assert settings.get("REN_CPU_ISA") == "scalar"
    for bad in ("AVX2", 2, None):  # from Python the exact word is asked for
        with pytest.raises(SettingsError, match="REN_CPU_ISA"):
            settings.override(REN_CPU_ISA=bad)
    assert settings.check("REN_CPU_ISA", "avx2") == "avx2"


def test_settings_error_is_a_parameter_error():
    assert issubclass(SettingsError, ParameterError) and issubclass(SettingsError, RenError)


@pytest.mark.parametrize("name, value", [(n, v) for n, vs in OUT_OF_RANGE.items() for v in vs])
def test_an_out_of_range_environment_value_names_the_range(monkeypatch, name, value):
    s = settings.SWITCHES[name]
    monkeypatch.setenv(name, str(value))
    with pytest.raises(SettingsError, match=rf"{name}={value} is outside the allowed range "
                                            rf"{s.allowed[0]}\.\.{s.allowed[-1]}"):
        settings._read_env(name)


@pytest.mark.parametrize("name, value", [(n, v) for n, vs in OUT_OF_RANGE.items() for v in vs])
def test_an_out_of_range_override_changes_nothing(name, value):
    before = {n: settings.get(n) for n in settings.SWITCHES}
    with pytest.raises(SettingsError, match=rf"settings.override: {name}={value} is outside"):
        settings.override(**{"REN_JIT": 0, name: value})  # REN_JIT's valid value is not set
    assert {n: settings.get(n) for n in settings.SWITCHES} == before


@pytest.mark.parametrize("name", sorted(OUT_OF_RANGE))
def test_the_ends_of_each_range_are_accepted(monkeypatch, name):
    r = settings.SWITCHES[name].allowed
    for value in (r[0], r[-1]):
        monkeypatch.setenv(name, str(value))
        assert settings._read_env(name) == value
        with settings.override(**{name: value}):
            assert settings.get(name) == value


def test_a_non_integer_environment_value_names_the_range(monkeypatch):
    monkeypatch.setenv("REN_CPU_THREADS", "many")
    with pytest.raises(SettingsError, match=r"REN_CPU_THREADS='many'.*not an integer.*1\.\.256"):
        settings._read_env("REN_CPU_THREADS")


def test_the_cache_dir_is_a_path_switch(monkeypatch, tmp_path):
    monkeypatch.delenv("REN_CACHE_DIR", raising=False)
    assert settings._read_env("REN_CACHE_DIR") == ""  # the reader supplies the default
    monkeypatch.setenv("REN_CACHE_DIR", str(tmp_path))
    assert settings._read_env("REN_CACHE_DIR") == str(tmp_path)
    with settings.override(REN_CACHE_DIR=tmp_path):  # a PathLike is taken as its str
        assert settings.get("REN_CACHE_DIR") == str(tmp_path)
    for bad in (5, b"/tmp", None):
        with pytest.raises(SettingsError, match="REN_CACHE_DIR must be a folder path"):
            settings.override(REN_CACHE_DIR=bad)
    with pytest.raises(SettingsError, match="NUL"):
        settings.override(REN_CACHE_DIR="/tmp/a\0b")


def test_check_validates_a_value_for_a_switch():
    assert settings.check("REN_CPU_THREADS", 4) == 4
    with pytest.raises(SettingsError, match=r"1\.\.256"):
        settings.check("REN_CPU_THREADS", 257)
    with pytest.raises(SettingsError, match="unknown switch"):
        settings.check("REN_NOPE", 1)


def test_describe_lists_the_allowed_values():
    text = settings.describe()
    assert "REN_CPU_THREADS=" in text and "(1..256)" in text and "(0..3)" in text
    assert "REN_CACHE_DIR=" in text
    assert "REN_CPU_ISA='auto'" in text and "(one of auto|avx512|avx2|scalar)" in text


def test_huge_thread_count_is_an_error_not_a_crash(tmp_path):
    """Run where a crash would be a crash: the old code died with SIGSEGV here."""
    script = ("import ren\n"
              "r = ren.RingSpec.generate(64, 4)\n"
              "a = ren.Poly.from_coefficients(list(range(64)), r, device='cpu')\n"
              "print(int((a.ntt() * a.ntt()).intt().numpy().sum()))\n")
    env = {**os.environ, "REN_CPU_THREADS": "100000", "REN_CACHE_DIR": str(tmp_path),
           "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", "")}
    res = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, cwd=REPO, timeout=300)
    assert res.returncode == 1, (res.returncode, res.stderr[-2000:])
    assert "SettingsError" in res.stderr and "REN_CPU_THREADS=100000" in res.stderr
    assert "1..256" in res.stderr


def test_an_override_holds_for_its_own_thread_only():
    import threading

    entered, release = threading.Event(), threading.Event()
    seen: dict[str, int] = {}

    def holder() -> None:
        with settings.override(REN_CHECK=1):
            seen["holder"] = settings.get("REN_CHECK")
            entered.set()
            release.wait(10)

    t = threading.Thread(target=holder)
    t.start()
    assert entered.wait(10)
    seen["other"] = settings.get("REN_CHECK")  # while the holder's block is open
    release.set()
    t.join()
    assert seen == {"holder": 1, "other": settings.SWITCHES["REN_CHECK"].default}


def test_nested_overrides_unwind_in_order():
    with settings.override(REN_DEBUG=1):
        with settings.override(REN_DEBUG=2, REN_CHECK=1):
            assert (settings.get("REN_DEBUG"), settings.get("REN_CHECK")) == (2, 1)
        assert (settings.get("REN_DEBUG"), settings.get("REN_CHECK")) == (1, 0)
    assert settings.get("REN_DEBUG") == 0


# -- switches read each time (Switch.fresh) ------------------------------------------------------
FRESH = {"REN_DISTRIBUTED_SHM", "REN_DISTRIBUTED_SHM_MIN_BYTES"}


def test_a_fresh_switch_is_read_each_time_and_others_once(monkeypatch):
    """`ren.distributed.shm`'s switches are read from the environment at each `get` (a client
    changes them between jobs); every other switch once per process."""
    assert {s.name for s in settings.SWITCHES.values() if s.fresh} == FRESH
    monkeypatch.setattr(settings, "_values", {})  # nothing read yet in this "process"
    monkeypatch.setenv("REN_DEBUG", "1")
    assert settings.get("REN_DEBUG") == 1
    monkeypatch.setenv("REN_DEBUG", "2")
    assert settings.get("REN_DEBUG") == 1  # once per process
    for raw, want in (("auto", "auto"), ("off", "off"), ("on", "on")):
        monkeypatch.setenv("REN_DISTRIBUTED_SHM", raw)
        assert settings.get("REN_DISTRIBUTED_SHM") == want
    for raw in ("0", "4096", "70000"):
        monkeypatch.setenv("REN_DISTRIBUTED_SHM_MIN_BYTES", raw)
        assert settings.get("REN_DISTRIBUTED_SHM_MIN_BYTES") == int(raw)
    monkeypatch.delenv("REN_DISTRIBUTED_SHM_MIN_BYTES")
    assert settings.get("REN_DISTRIBUTED_SHM_MIN_BYTES") == 64 * 1024
    assert "REN_DISTRIBUTED_SHM" not in settings._values  # nothing cached for it
    # a bad value is an error where it is read, each time (not once, then stale)
    monkeypatch.setenv("REN_DISTRIBUTED_SHM", "sometimes")
    with pytest.raises(SettingsError, match=r"REN_DISTRIBUTED_SHM='sometimes' is not allowed"
                                            r".*one of auto\|on\|off"):
        settings.get("REN_DISTRIBUTED_SHM")
    monkeypatch.setenv("REN_DISTRIBUTED_SHM_MIN_BYTES", "lots")
    with pytest.raises(SettingsError, match=r"REN_DISTRIBUTED_SHM_MIN_BYTES='lots'.*not an "
                                            r"integer"):
        settings.get("REN_DISTRIBUTED_SHM_MIN_BYTES")


def test_an_override_wins_over_a_fresh_switch_for_its_block(monkeypatch):
    monkeypatch.setenv("REN_DISTRIBUTED_SHM", "auto")
    with settings.override(REN_DISTRIBUTED_SHM="off", REN_DISTRIBUTED_SHM_MIN_BYTES=7):
        monkeypatch.setenv("REN_DISTRIBUTED_SHM", "on")  # the environment changes meanwhile
        assert settings.get("REN_DISTRIBUTED_SHM") == "off"
        assert settings.get("REN_DISTRIBUTED_SHM_MIN_BYTES") == 7
    assert settings.get("REN_DISTRIBUTED_SHM") == "on"  # the environment's, read now


def test_a_choice_switch_reads_its_aliases_from_the_environment_only(monkeypatch):
    for s in settings.SWITCHES.values():  # aliases name allowed words of a choice switch
        assert not s.aliases or s.is_choice, s.name
        words = s.allowed if isinstance(s.allowed, tuple) else ()
        assert all(a not in words and w in words for a, w in s.aliases), s.name
    for raw, want in (("1", "on"), ("TRUE", "on"), (" 0 ", "off"), ("false", "off"),
                      ("Auto", "auto"), ("  ", "auto")):
        monkeypatch.setenv("REN_DISTRIBUTED_SHM", raw)
        assert settings._read_env("REN_DISTRIBUTED_SHM") == want, raw
    monkeypatch.setenv("REN_CPU_ISA", "1")  # another switch's aliases are not its own
    with pytest.raises(SettingsError, match="REN_CPU_ISA='1' is not allowed"):
        settings._read_env("REN_CPU_ISA")
    for bad in ("1", True, "ON"):  # from Python the exact word is asked for
        with pytest.raises(SettingsError, match="REN_DISTRIBUTED_SHM"):
            settings.override(REN_DISTRIBUTED_SHM=bad)


def test_describe_and_the_settings_page_name_the_fresh_switches():
    lines = {line.split("=", 1)[0]: line for line in settings.describe().splitlines()}
    assert {n for n, line in lines.items() if "; read each time)" in line} == FRESH
    with open(os.path.join(REPO, "docs", "howto-settings.md")) as f:
        page = f.read()
    bullet = page.split("* Switches are read from the environment once per process")[1]
    bullet = bullet.split("\n* ")[0]
    assert "read each time" in bullet
    assert set(re.findall(r"`(REN_\w+)`", bullet)) == FRESH
