"""Passes when the answer gives the right figure and names the document it comes from:
for a grounded agent, citing its source is part of the answer."""

import re

# case id -> (the figure, the file names, without .md, of the documents that state it)
EXPECTED = {"starter-history-cited": (14, ("pricing", "planning-memo-2024-11"))}


def check(answer, case):
    figure, documents = EXPECTED[case["id"]]
    numbers = {float(n.replace(",", "")) for n in re.findall(r"\d[\d,]*(?:\.\d+)?", answer)}
    if figure not in numbers:
        return False, f"the answer does not give {figure}"
    cited = [d for d in documents if re.search(rf"\b{re.escape(d)}(\.md)?\b", answer, re.IGNORECASE)]
    if not cited:
        return False, f"the answer cites none of {', '.join(d + '.md' for d in documents)}"
    return True, f"gives {figure} and cites {cited[0]}.md"
