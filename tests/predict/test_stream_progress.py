"""Progress of a streaming predict: plain lines with sentences/s and ETA into a file."""

from __future__ import annotations

import io
import re

from rich.console import Console

from bertkit.predict.progress import StreamProgress


def test_plain_lines_give_rate_share_and_eta():
    buf = io.StringIO()
    progress = StreamProgress(Console(file=buf, width=200), total=1000, unit="sentences",
                              interval=0)
    progress.start -= 10  # 10 s into the run
    line = progress.update(500, 250)
    assert re.fullmatch(r"predict: 500 sentences \(25%\), 5\d\.\d sentences/s, elapsed 0:10, "
                        r"ETA 0:(29|30|31)", line), line
    assert buf.getvalue().strip() == line
    quiet = StreamProgress(Console(file=io.StringIO()), total=1000, unit="sentences")
    assert quiet.update(10, 10) is None  # not yet 30 s since the start
    assert StreamProgress(None, 0, "sentences", interval=0).update(1, 1) is None
