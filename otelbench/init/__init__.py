"""``otelbench init``'s work: what a project is (``project``: its language, libraries and
providers; ``javascript``: the JavaScript side), and the check that its span arrives
(``check``, with ``js_check.mjs`` for JavaScript). The command: ``otelbench.commands.init``."""
