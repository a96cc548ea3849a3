"""The judge's own noise: how far its repeats (``judge_repeats``) land from its first
scores (``evals``), per judge model and version (docs/judge.md, "Judge noise").

A repeat with no score (an unusable answer) is left out. The operator's figures
(``otelbench process`` prints them): no privacy rule applies, no run is shown.
"""

from __future__ import annotations

# One row per judge model and version with usable repeats:
# - runs: runs judged again; repeats: usable repeats (pairs of a first score and a repeat);
# - mean_abs_diff: the mean |repeat − first score| over the pairs;
# - sd: the pooled within-run standard deviation (each run's first score and repeats about
#   their own mean, sum of squares over sum of degrees of freedom; sqrt(mean(d²)/2) when
#   every run has one repeat);
# - same_side: the share of pairs whose repeat falls on the same side of 0.5 as the first;
# - judged, score_variance: the judge's scored runs and their scores' sample variance;
# - noise_share: sd² / score_variance, the part of the runs' variance that is the judge's.
JUDGE_NOISE = """WITH pairs AS (
    SELECT judge_model, judge_version, trace_id, "repeat", first_score, score FROM judge_repeats
    WHERE score IS NOT NULL AND first_score IS NOT NULL
),
firsts AS (
    SELECT judge_model, judge_version, trace_id, arg_min(first_score, "repeat") AS score
    FROM pairs GROUP BY judge_model, judge_version, trace_id
),
scores AS (
    SELECT judge_model, judge_version, trace_id, score FROM firsts
    UNION ALL SELECT judge_model, judge_version, trace_id, score FROM pairs
),
per_run AS (
    SELECT judge_model, judge_version, count(*) - 1 AS df, var_samp(score) * (count(*) - 1) AS ss
    FROM scores GROUP BY judge_model, judge_version, trace_id
),
spread AS (
    SELECT judge_model, judge_version, count(*) AS runs, sum(df) AS df, sum(ss) AS ss
    FROM per_run GROUP BY judge_model, judge_version
),
agreement AS (
    SELECT judge_model, judge_version, count(*) AS repeats, avg(abs(score - first_score)) AS mean_abs_diff,
           avg(CASE WHEN (score >= 0.5) = (first_score >= 0.5) THEN 1.0 ELSE 0.0 END) AS same_side
    FROM pairs GROUP BY judge_model, judge_version
),
overall AS (
    SELECT judge_model, judge_version, count(score) AS judged, var_samp(score) AS score_variance
    FROM evals WHERE score IS NOT NULL GROUP BY judge_model, judge_version
)
SELECT a.judge_model, a.judge_version, s.runs, a.repeats, a.mean_abs_diff, sqrt(s.ss / s.df) AS sd, a.same_side,
       o.judged, o.score_variance, (s.ss / s.df) / nullif(o.score_variance, 0) AS noise_share
FROM agreement AS a
JOIN spread AS s USING (judge_model, judge_version)
LEFT JOIN overall AS o USING (judge_model, judge_version)
ORDER BY a.judge_model, a.judge_version"""
