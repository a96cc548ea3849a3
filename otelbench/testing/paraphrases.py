"""Paraphrases of one failure against look-alikes: the figure the embedder is held to.

Each case is an anchor failure (error type, message), two paraphrases of the same failure
in other words, and three other failures that share the anchor's words ("timed out",
"not found", "limit"). An embedder separates them when a paraphrase is closer to the
anchor than a look-alike: ``ordered_triplets`` counts the (anchor, paraphrase, look-alike)
triplets ordered right, out of 36. tests/processors/test_embed.py holds the default
embedder to it, and benchmarks/cluster.py prints it.
"""

from __future__ import annotations

from collections.abc import Callable

Failure = tuple[str, str]  # (error type, message)

# (anchor, paraphrases of the same failure, other failures that share its words)
SEPARATION = [
    (("TimeoutError", "get_weather timed out after 31s"),
     [("TimeoutError", "the weather API did not respond within 10 seconds"),
      ("ReadTimeout", "weather lookup took longer than 30 s and was cancelled")],
     [("JSONDecodeError", "get_weather returned a body that is not valid JSON"),
      ("TimeoutError", "search_flights timed out after 31s"),
      ("KeyError", "get_weather response has no 'temperature' field")]),
    (("FileNotFoundError", "[Errno 2] No such file or directory: '/srv/data/in.csv'"),
     [("FileNotFoundError", "the file /srv/data/in.csv was not found on disk"),
      ("OSError", "read_file could not open /tmp/x.csv: file does not exist")],
     [("ValueError", "city 'Springfield' not found by the geocoder"),
      ("NotFoundError", "contact 123 not found in the CRM"),
      ("PermissionError", "[Errno 13] Permission denied: '/srv/data/in.csv'")]),
    (("RateLimitError", "Rate limit reached for gpt-4o-mini on tokens per min"),
     [("RateLimitError", "too many requests to the model provider, retry after 20s"),
      ("APIStatusError", "Error code: 429 - rate limit exceeded, please slow down")],
     [("PermissionDeniedError", "monthly spending limit of $100 reached for this API key"),
      ("BadRequestError", "maximum context length is 8192 tokens, however you requested 9000 tokens"),
      ("QuotaExceeded", "search API daily quota of 100 queries exhausted")]),
    (("BadRequestError", "This model's maximum context length is 8192 tokens, however you requested 9000 tokens"),
     [("BadRequestError", "prompt too long: 9000 tokens exceeds the context window of 8192"),
      ("ContextWindowExceeded", "the conversation no longer fits in the model's context window")],
     [("MaxIterationsError", "agent stopped after reaching the maximum of 10 iterations"),
      ("MemoryError", "the worker ran out of memory while loading 5000000 rows"),
      ("RateLimitError", "Rate limit reached for gpt-4o-mini on tokens per min")]),
    (("CardError", "Your card was declined (decline_code: insufficient_funds)"),
     [("PaymentError", "the bank refused the charge because the account has insufficient funds"),
      ("CardError", "payment declined by the issuer: not enough money on the card")],
     [("CardError", "the card number is invalid: checksum failed"),
      ("SoldOutError", "no rooms available, the hotel declined the booking"),
      ("PermissionDeniedError", "You exceeded your current quota, please check your plan and billing details")]),
    (("SMTPRecipientsRefused", "send_email: recipient address rejected: bob@example.com"),
     [("SMTPException", "the mail server bounced the message: mailbox unavailable"),
      ("DeliveryError", "email to bob@example.com could not be delivered, the address does not exist")],
     [("MessageTooLarge", "send_email rejected: attachment exceeds the 10 MB size limit"),
      ("SlackApiError", "channel_not_found when posting the message"),
      ("TokenExpiredError", "the Gmail access token expired, re-consent required")]),
]


def ordered_triplets(similarity: Callable[[Failure, Failure], float]) -> tuple[int, int]:
    """(triplets where a paraphrase is closer to the anchor than a look-alike, all triplets)."""
    right = total = 0
    for anchor, paraphrases, lookalikes in SEPARATION:
        for p in paraphrases:
            for other in lookalikes:
                right += similarity(anchor, p) > similarity(anchor, other)
                total += 1
    return right, total


def mean_similarities(similarity: Callable[[Failure, Failure], float]) -> list[tuple[float, float]]:
    """Per anchor: (mean similarity to its paraphrases, mean similarity to its look-alikes)."""
    out = []
    for anchor, paraphrases, lookalikes in SEPARATION:
        para = sum(similarity(anchor, p) for p in paraphrases) / len(paraphrases)
        look = sum(similarity(anchor, o) for o in lookalikes) / len(lookalikes)
        out.append((para, look))
    return out
