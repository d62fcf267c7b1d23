"""Print one of the README's two set-up commands ("app" or "test"), so CI runs exactly what it says."""

import pathlib
import re
import sys

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"
MARKERS = {"app": "run-the-app", "test": "run-the-tests"}


def readme_command(which: str, text: str | None = None) -> str:
    """The single command line inside the fenced block that follows `<!-- run-the-... -->`."""
    text = README.read_text(encoding="utf-8") if text is None else text
    match = re.search(rf"<!-- {MARKERS[which]} -->\s*```(?:bash|sh)?\n(.+?)\n```", text, re.S)
    if not match or "\n" in match.group(1).strip():
        raise SystemExit(f"README.md must hold one command line after <!-- {MARKERS[which]} -->")
    return match.group(1).strip()


if __name__ == "__main__":
    print(readme_command(sys.argv[1] if len(sys.argv) > 1 else "test"))
