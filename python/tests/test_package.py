"""orion.compile and orion.inspect against `orion compile --target ane` and `orion inspect --json`,
and the package run on ane-sim giving `orion generate --device ane-sim --package`'s text."""
import json

import orion
from conftest import run_orion


def test_compile_and_inspect_are_the_clis(tiny, tmp_path):
    report = orion.compile(tiny, target="ane", out=str(tmp_path / "py.pkg"), seq=32)
    assert report["kernels"] > 0
    run_orion("compile", "-m", tiny, "--target", "ane", "-o", tmp_path / "cli.pkg", "--seq", "32")
    mine = orion.inspect(str(tmp_path / "py.pkg"))
    cli = json.loads(run_orion("inspect", tmp_path / "cli.pkg", "--json").stdout)
    assert mine == cli
    assert [p["name"] for p in mine["programs"]][:2] == ["prefill", "decode"]
    model = orion.load(tiny, device="ane-sim", package=str(tmp_path / "py.pkg"))
    cli = run_orion("generate", "-m", tiny, "-p", "Hello", "-n", "6", "--temp", "0", "--device", "ane-sim",
                    "--package", tmp_path / "py.pkg").stdout
    assert model.generate("Hello", max_tokens=6, temperature=0) == cli[len("Hello"):-1].decode("utf-8", "replace")
