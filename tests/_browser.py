"""Headless Chromium for the HTML report's tests and screenshots: Debian's ``chromium`` and
``chromium-driver`` packages driven by Selenium, with the driver's path given so that Selenium Manager
never tries to download a browser."""

from __future__ import annotations

import os
import shutil

#: Where Debian installs the browser and its driver (CHROMIUM / CHROMEDRIVER override them).
CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = os.environ.get("CHROMEDRIVER") or shutil.which("chromedriver") or "/usr/bin/chromedriver"


def missing() -> str | None:
    """Why the browser test cannot run here, or None."""
    try:
        import selenium  # noqa: F401
    except ModuleNotFoundError:
        return "selenium is not installed (pip install '.[test]')"
    for what, path in (("chromium", CHROMIUM), ("chromedriver", CHROMEDRIVER)):
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            return f"{what} not found at {path} (apt-get install chromium chromium-driver)"
    return None


def chromium(width: int = 1280, height: int = 900):
    """A headless Chromium WebDriver whose console messages are kept (``driver.get_log('browser')``)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--hide-scrollbars",
                f"--window-size={width},{height}", "--force-device-scale-factor=1"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)


def load(driver, uri: str, *, limit: float = 600.0) -> None:
    """Open ``uri`` and wait until the page has loaded (``document.readyState`` is "complete"). Selenium's ``get``
    returns once the navigation is committed, which on a busy machine can be before the load event; the wait polls
    for that event, and ``limit`` only keeps a page that never loads from hanging the run."""
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(uri)
    WebDriverWait(driver, limit, poll_frequency=0.05).until(
        lambda d: d.execute_script("return document.readyState") == "complete"
    )


def screenshot(driver, path: str, width: int, height: int, *, full_page: bool = True) -> None:
    """A PNG of the page at ``width`` CSS pixels (a phone is 390 wide); the whole page's height when ``full_page``."""
    driver.set_window_size(width, height)
    if full_page:
        total = driver.execute_script("return document.documentElement.scrollHeight")
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                               {"width": width, "height": min(int(total), 16000), "deviceScaleFactor": 1,
                                "mobile": width < 600})
    else:
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                               {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600})
    driver.save_screenshot(str(path))
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
