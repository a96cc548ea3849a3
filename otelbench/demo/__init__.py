"""The demo (``otelbench demo``): its steps and progress, its agents — simulated sample runs,
the ``ops-helper`` tool agent and the research agent of the ``grounded-research`` suite —
and its closing report."""
