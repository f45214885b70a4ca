"""Regenerate the README's screenshots of ``calibcli report`` (docs/report/*.png) from sample_data/.

    python docs/report/make_screenshots.py

Builds two reports with the command as the README shows it (one file; a multi-file batch), opens them in
headless Chromium (Debian's ``chromium`` and ``chromium-driver``; see tests/_browser.py) and saves the
top of each page at desktop (1280 px) and phone (390 px) widths (the pages go to a temporary folder).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import _browser  # noqa: E402

REPORTS = {
    "single": ["sample_data/breast_cancer_nb.csv"],
    "batch": ["sample_data/breast_cancer_nb.csv", "sample_data/digits_nb.parquet", "sample_data/eval_shards"],
}
SHOTS = {"desktop": (1280, 1100), "phone": (390, 1500)}


def main() -> None:
    why = _browser.missing()
    if why:
        sys.exit(f"cannot take screenshots: {why}")
    driver = _browser.chromium()
    tmp = Path(tempfile.mkdtemp(prefix="calibcli-report-"))
    try:
        for name, files in REPORTS.items():
            page = tmp / f"{name}.html"
            subprocess.run(["calibcli", "report", *files, "-o", str(page)], cwd=ROOT, check=True)
            driver.get(page.as_uri())
            errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
            if errors:
                sys.exit(f"{page}: console errors: {errors}")
            for shot, (width, height) in SHOTS.items():
                path = HERE / f"{name}_{shot}.png"
                _browser.screenshot(driver, path, width, height, full_page=False)
                print(f"wrote {path.relative_to(ROOT)}")
    finally:
        driver.quit()
    _shrink(HERE.glob("*.png"))


def _shrink(paths) -> None:
    """Quantise the PNGs to 64 colours (Pillow, when installed), so the repository stays small."""
    try:
        from PIL import Image
    except ModuleNotFoundError:
        return
    for path in paths:
        with Image.open(path) as im:
            im.convert("RGB").quantize(colors=64, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)


if __name__ == "__main__":
    main()
