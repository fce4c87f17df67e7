"""Rust source read as code: what the scripts that check the source share."""

import re

RAW = re.compile(r'(b?r)(#*)"')
CHAR = re.compile(r"'(?:\\.[^']*|[^\\'])'")


def code_only(text):
    """The text with comments (doc comments and their links included), string
    and character literals blanked out, so that only real paths and braces
    remain. Each blanked span keeps its newlines, so lines keep their numbers;
    a string becomes `""`, a character `' '`."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank = ""
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            blank = " "
        elif c == '"' or (c in "rb" and RAW.match(text, i) and not re.match(r"\w", text[i - 1 : i] or " ")):
            m = RAW.match(text, i)
            if m:
                end = '"' + m.group(2)
                j = text.find(end, m.end())
                j = n if j < 0 else j + len(end)
            else:
                j = i + (1 if c == '"' else 2)
                while j < n and text[j] != '"':
                    j += 2 if text[j] == "\\" else 1
                j += 1
            blank = '""'
        elif c == "'" and (m := CHAR.match(text, i)):
            j = m.end()
            blank = "' '"
        else:
            out.append(c)
            i += 1
            continue
        out.append(blank + "\n" * text.count("\n", i, j))
        i = j
    return "".join(out)
