"""What the web UI reads of ``otelbench replay``'s results (web/pages/replays.py): the
``replay_runs`` view (storage/queries/replay.py), each replayed run beside its recorded
run's row in the ``runs`` rollup (task and answer previews, owner).

Replays are benchmark evidence — what a candidate model answered to recorded calls — and
no statement here adds them to an agent's own figures.

Privacy is applied here: a replayed run shows only where its recorded run does (the
rollup's row, visible under ``$private_agents`` / ``$private_owners`` as on every page),
and only when the replay's own span names a visible agent and was not sent with a private
owner's key. So a private agent's replays, or replays of a private owner's runs, appear
nowhere; a replay whose recorded run the rollup does not hold yet appears after its next
fold. The candidate's answer is cut to ``$chars`` characters here, its full length beside.
"""

from __future__ import annotations

from otelbench.storage.queries.bench import bench_spans
from otelbench.storage.queries.rollups import RUNS_CTE

# Whether the lake holds any replayed run at all (else the pages need not ask the view).
HAS_REPLAYS = f"""SELECT 1 AS found FROM spans AS s
WHERE {bench_spans('replay_run')}
LIMIT 1"""

_VISIBLE = f"""WITH {RUNS_CTE},
visible AS (
    SELECT p.*, r.owner AS recorded_owner, r.input_preview AS recorded_input, r.output_preview AS recorded_output,
           r.status AS recorded_status
    FROM replay_runs AS p
    JOIN runs AS r ON r.trace_id = p.trace_id AND r.agent = p.agent
    WHERE p.replay_id IS NOT NULL AND p.agent IS NOT NULL
      AND NOT list_contains($private_agents, p.agent)
      AND NOT list_contains($private_owners, coalesce(p.owner, ''))
      AND NOT list_contains($private_owners, coalesce(r.owner, ''))
)"""


def _both(agg: str, side: str, figure: str) -> str:
    """``agg`` of ``side``'s ``figure`` over the runs that have it on both sides (a ratio of
    two figures over different runs would compare different work)."""
    return (f"{agg}({side}_{figure}) FILTER (WHERE recorded_{figure} IS NOT NULL "
            f"AND candidate_{figure} IS NOT NULL)")


def _change(figure: str, agg: str) -> str:
    recorded, candidate = _both(agg, "recorded", figure), _both(agg, "candidate", figure)
    return (f"{recorded} AS recorded_{figure}, {candidate} AS candidate_{figure},\n"
            f"       {_both('count', 'candidate', figure)} AS runs_{figure},\n"
            f"       {candidate} / nullif({recorded}, 0) AS ratio_{figure}")


# One row per replay and agent (a replay has one candidate; a suite run's may hold several
# agents): runs, the shares that behave the same and are at least as good, the share of
# calls with the same tool calls, median TTFT and model time and mean output tokens on
# each side with their ratio, and each side's mean cost (as ``otelbench replay`` reports
# them). Newest first.
REPLAYS = f"""{_VISIBLE}
SELECT replay_id, agent, any_value(candidate) AS candidate, min(start_time) AS start_time, count(*) AS runs,
       count(*) FILTER (WHERE behaviour_matches) AS behaviour_matches,
       count(*) FILTER (WHERE at_least_as_good) AS at_least_as_good,
       avg(behaviour_matches::INTEGER) AS match_share, avg(at_least_as_good::INTEGER) AS as_good_share,
       sum(calls_matching) AS calls_matching, sum(calls) AS calls,
       sum(calls_matching) / nullif(sum(calls), 0) AS calls_same_share,
       count(judge_score) AS judged, avg(judge_score) AS judge_score, max(divergence) AS max_divergence,
       {_change('ttft_ms', 'median')},
       {_change('model_ms', 'median')},
       {_change('output_tokens', 'avg')},
       -- each side's mean cost over the runs that have one: a local candidate has none
       avg(recorded_cost_usd) AS recorded_cost_usd, avg(candidate_cost_usd) AS candidate_cost_usd
FROM visible
GROUP BY replay_id, agent
ORDER BY start_time DESC, replay_id, agent"""

# One replay's runs, most divergent first, each beside its recorded run (previews of its
# task and final answer from the rollup; the candidate's answer cut to $chars).
REPLAY_RUNS = f"""{_VISIBLE}
SELECT replay_id, candidate, trace_id, agent, start_time, calls, calls_matching, behaviour_matches,
       at_least_as_good, answer_agrees, answer_agreement, divergence, recorded_ttft_ms, candidate_ttft_ms,
       recorded_model_ms, candidate_model_ms, recorded_output_tokens, candidate_output_tokens,
       recorded_cost_usd, candidate_cost_usd, left(candidate_answer, $chars) AS candidate_answer, length(candidate_answer) AS candidate_answer_chars,
       errors, judge_score, recorded_status, recorded_input, recorded_output, owner, recorded_owner
FROM visible
WHERE replay_id = $replay_id
ORDER BY divergence DESC NULLS LAST, agent, trace_id"""

__all__ = ["HAS_REPLAYS", "REPLAYS", "REPLAY_RUNS"]
