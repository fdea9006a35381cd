"""Open a report page in a real headless browser (Debian's ``chromium``) the way a person
sees it: every image must decode, nothing may overflow horizontally at 1280 px, and a
screenshot of the top of the page is saved.

    python tests/support/browser.py results/default/report/index.html   # writes screenshot.png beside it
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

WIDTH = 1280
# Appended to a copy of the page: after load, check every image, measure the page, and
# write the result into the DOM, which --dump-dom prints.
PROBE = """
<script>
window.addEventListener('load', () => {
  // the load event waits for every image: decoded means complete with a natural size
  const imgs = [...document.images];
  const ok = imgs.map(i => i.complete && i.naturalWidth > 0 && i.naturalHeight > 0);
  const de = document.documentElement;
  const wide = [...document.querySelectorAll('body *')]
    .filter(e => e.getBoundingClientRect().right > de.clientWidth + 1 && !e.closest('.scroll, details:not([open])'))
    .slice(0, 5).map(e => e.tagName + (e.id ? '#' + e.id : ''));
  const out = {images: imgs.length, broken: imgs.filter((_, k) => !ok[k]).map(i => i.alt),
               scrollWidth: de.scrollWidth, clientWidth: de.clientWidth, wide: wide,
               findingsTop: (document.getElementById('findings') || {offsetTop: -1}).offsetTop,
               answerTop: (document.getElementById('answer') || {offsetTop: -1}).offsetTop,
               catalogTop: (document.getElementById('catalog') || {offsetTop: -1}).offsetTop,
               answerPlotBottom: (() => { const f = document.getElementById('plot-at_scale');
                                          return f ? f.querySelector('img').getBoundingClientRect().bottom : -1; })()};
  const pre = document.createElement('pre');
  pre.id = 'catbench-probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>
"""


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _run(binary: str, profile: str, *args: str, timeout: float = 120) -> str:
    cmd = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
           "--hide-scrollbars", f"--user-data-dir={profile}", "--no-first-run", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return proc.stdout


def check_page(index: Path, screenshot: Path | None = None, width: int = WIDTH, height: int = 2200) -> dict:
    """Load ``index`` in headless chromium: {images, broken, scrollWidth, clientWidth, wide,
    findingsTop, answerTop, answerPlotBottom}; saves a ``width`` x ``height`` screenshot of the top of the page."""
    binary = chromium()
    if binary is None:
        raise RuntimeError("chromium not found (apt-get install chromium)")
    index = Path(index).resolve()
    with tempfile.TemporaryDirectory(prefix="cb-chromium-") as profile:
        probe = index.with_name(".probe-" + index.name)
        probe.write_text(index.read_text().replace("</body>", PROBE + "</body>"))
        try:
            dom = _run(binary, profile, f"--window-size={width},{height}", "--virtual-time-budget=15000",
                       "--dump-dom", probe.as_uri())
        finally:
            probe.unlink(missing_ok=True)
        m = re.search(r'<pre id="catbench-probe">(.*?)</pre>', dom, re.S)
        if not m:
            raise RuntimeError("the page's probe did not run (no result in the DOM)")
        result = json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&"))
        if screenshot is not None:
            _run(binary, profile, f"--window-size={width},{height}", f"--screenshot={Path(screenshot).resolve()}",
                 index.as_uri())
    return result


def main(argv: list[str]) -> int:
    index = Path(argv[0] if argv else "results/default/report/index.html")
    shot = index.with_name("screenshot.png")
    r = check_page(index, shot)
    print(json.dumps(r))
    ok = r["images"] > 0 and not r["broken"] and r["scrollWidth"] <= r["clientWidth"]
    print(("ok: " if ok else "PROBLEM: ") + f"{r['images']} images, {len(r['broken'])} broken, "
          f"page {r['scrollWidth']} px wide in a {r['clientWidth']} px window; screenshot {shot}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
