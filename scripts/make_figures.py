"""Regenerate the README's figures (docs/figures/*.png) by running the real ``calibcli diagram``.

Every figure the README shows is made here, by the command a user would type, so the pictures never
drift from the code: rerun this script after changing the drawing and commit the PNGs it writes. The
command's files are byte-for-byte reproducible (seeded bootstrap, no dates in the files), so
``--check`` redraws every figure into a temporary folder and fails (exit 1) when any differs from the
committed one (the same matplotlib and FreeType versions are needed for identical bytes).

    python scripts/make_figures.py            # write docs/figures/*.png
    python scripts/make_figures.py --check    # compare with the committed files
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIGURES = ROOT / "docs" / "figures"

#: (file name, arguments of `calibcli diagram` before `-o`): what the README shows, in its order.
RUNS = [
    ("breast_cancer_nb.png", ["sample_data/breast_cancer_nb.csv"]),
    ("breast_cancer_nb_binned_log.png",
     ["sample_data/breast_cancer_nb.csv", "--kind", "binned", "--hist-scale", "log",
      "--title", "Naive Bayes, breast cancer (n = 569)"]),
    ("digits_nb_top_label.png", ["sample_data/digits_nb.parquet"]),
    ("breast_cancer_two_models.png",
     ["sample_data/eval_shards/model=logreg", "sample_data/eval_shards/model=nb", "--name", "logistic regression",
      "--name", "naive Bayes", "--title", "Two models of the breast-cancer data (held-out rows)"]),
    ("digits_nb_marginal.png",
     ["sample_data/digits_nb.parquet", "--mode", "marginal", "--kind", "binned", "--n-boot", "100"]),
    ("diabetes_forest_regression.png", ["sample_data/regression/diabetes_forest.csv"]),
]


def command(name: str, args: list[str], folder: Path) -> list[str]:
    return [sys.executable, "-m", "calibcli", "diagram", *args, "-o", str(folder / name)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="redraw into a temporary folder and compare")
    options = parser.parse_args()
    FIGURES.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) if options.check else FIGURES
        differ = []
        for name, args in RUNS:
            cmd = command(name, args, folder)
            print("$", shlex.join(["calibcli", *cmd[3:]]).replace(str(folder), "docs/figures"), flush=True)
            done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
            if done.returncode != 0:
                sys.stderr.write(done.stderr)
                return done.returncode
            print(done.stdout.splitlines()[0].replace(str(folder), "docs/figures"))
            if options.check and (folder / name).read_bytes() != (FIGURES / name).read_bytes():
                differ.append(name)
    if differ:
        print(f"differ from docs/figures: {', '.join(differ)}: rerun python scripts/make_figures.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
