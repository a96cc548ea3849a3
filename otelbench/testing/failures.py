"""Planted failure families: synthetic agent runs whose failures come in known kinds, for
the clustering tests (tests/processors/) and ``benchmarks/cluster.py``.

A family is one root cause written several ways: error message paraphrases, the failing
tool's own error, and the agent's final answers, with slots filled at random per run —
numbers, ids, hex, paths, timestamps (which normalization removes) and cities or dates
(which it keeps, as real answers vary). Families share words on purpose ("timed out",
"not found", "limit", "weather"), so clustering must go by meaning. Rows carry the
family's name in ``family`` (``"noise"`` for one-off failures, ``"success"`` for runs that
went well), the truth a test scores the clustering against.
"""

from __future__ import annotations

import datetime as dt
import random
import string
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from otelbench.testing.agent_runs import Run

START = dt.datetime(2025, 3, 10, tzinfo=dt.timezone.utc)
CITIES = ("Paris", "Lyon", "Berlin", "Madrid", "Rome", "Oslo", "Lisbon", "Vienna", "Prague", "Dublin", "Athens",
          "Warsaw", "Zurich", "Munich", "Porto", "Nice", "Geneva", "Milan", "Seville", "Krakow")


@dataclass(frozen=True)
class Family:
    name: str
    error_type: str | None          # None: the run did not error, it scored low
    messages: tuple[str, ...]       # the run's error message, or (low score) its answer
    tool: str | None = None
    tool_errors: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()


def _f(name: str, error_type: str | None, messages: str, tool: str | None = None, tool_errors: str = "",
       outputs: str = "") -> Family:
    """Paraphrases separated by ' | '."""
    def split(s: str) -> tuple[str, ...]:
        return tuple(x.strip() for x in s.split(" | ") if x.strip())
    return Family(name, error_type, split(messages), tool, split(tool_errors), split(outputs))


SORRY = ("Sorry, something went wrong and I could not finish your request. | I ran into a problem and can't "
         "complete this right now. | Unfortunately I was unable to complete the task.")

# Ten families that share words in pairs; the tests plant these.
CORE = (
    _f("weather_timeout", "TimeoutError",
       "get_weather timed out after {n}s | the weather API did not respond within {n} seconds | "
       "request to {url} exceeded the {n}s deadline | weather lookup took longer than {n} s and was cancelled",
       "get_weather", "TimeoutError: timed out after {n}s | ReadTimeout: no response from {url} in {n}s",
       "Sorry, I couldn't fetch the weather for {city} right now. | The weather service is not responding; please "
       "try again later. | I was unable to get the forecast for {city} because the service timed out."),
    _f("weather_bad_json", "JSONDecodeError",
       "Expecting value: line {n} column {n} (char {n}) while parsing the get_weather response | "
       "get_weather returned a body that is not valid JSON | could not decode the weather API response as JSON "
       "at position {n}",
       "get_weather", "JSONDecodeError: Expecting value: line {n} column {n} | ValueError: invalid JSON from {url}",
       "I got an unreadable answer from the weather service for {city}. | The weather data for {city} came back "
       "garbled, so I can't report it."),
    _f("flight_timeout", "TimeoutError",
       "search_flights timed out after {n}s | the flight search provider did not answer within {n} seconds | "
       "flight availability query to {url} exceeded its {n}s timeout",
       "search_flights", "TimeoutError: timed out after {n}s | ReadTimeout: {url} took more than {n}s",
       "I couldn't search flights to {city} in time. | The flight search is taking too long, please retry later."),
    _f("llm_rate_limit", "RateLimitError",
       "Error code: 429 - Rate limit reached for gpt-4o-mini on tokens per min: Limit {n}, Used {n}, Requested {n} |"
       " the model provider rejected the call: too many requests, retry after {n}s | "
       "rate limit exceeded for the chat completions endpoint, please slow down",
       None, "", SORRY),
    _f("billing_quota", "PermissionDeniedError",
       "You exceeded your current quota, please check your plan and billing details (org {id}) | "
       "monthly spending limit of ${n} reached for this API key | insufficient_quota: the account {id} has no "
       "credit left",
       None, "", SORRY),
    _f("file_not_found", "FileNotFoundError",
       "[Errno 2] No such file or directory: '{path}' | read_file could not open {path}: file does not exist | "
       "the file {path} was not found on disk",
       "read_file", "FileNotFoundError: [Errno 2] No such file or directory: '{path}' | OSError: cannot open {path}",
       "I couldn't find the file you mentioned. | The document you asked about does not exist where I looked."),
    _f("city_unknown", "ValueError",
       "unknown location '{city}': geocoding returned no results | geocode found no match for the place "
       "'{city}' | could not resolve city name {city} to coordinates",
       "geocode", "ValueError: no results for '{city}' | LookupError: location {city} not found",
       "I don't know a place called {city}; could you check the spelling? | I could not locate {city} on the map."),
    _f("context_overflow", "BadRequestError",
       "This model's maximum context length is {n} tokens, however you requested {n} tokens | "
       "prompt too long: {n} tokens exceeds the context window of {n} | context_length_exceeded: reduce the "
       "length of the messages",
       None, "", SORRY),
    _f("max_iterations", "MaxIterationsError",
       "agent stopped after reaching the maximum of {n} iterations without a final answer | "
       "Agent exceeded max_iterations={n}: tool loop did not converge | the run hit the step limit ({n} steps) "
       "while still calling tools",
       None, "", "I kept trying but could not reach an answer. | Agent stopped due to iteration limit or time limit."),
    _f("hallucinated_booking", None,
       "Your hotel in {city} is booked for {date}, confirmation number {id}. | I have reserved a room at the "
       "Grand Hotel {city} for {date}; your booking reference is {id}. | Done! The hotel in {city} is confirmed "
       "for {date} (reference {id})."),
)

_MORE = [  # (name, error type, messages, tool, tool errors, outputs)
    ("db_connection_refused", "OperationalError", "could not connect to server: Connection refused, is the server "
     "running on host {ip} and accepting TCP/IP connections on port {n}? | connection to the orders database at {ip} "
     "was refused | psycopg could not reach postgres at {ip}:{n}", "query_orders",
     "OperationalError: connection refused | OperationalError: could not connect to {ip}",
     "I can't reach the order database right now. | Order lookup is unavailable at the moment."),
    ("db_deadlock", "DeadlockDetected", "deadlock detected while updating table orders: process {n} waits for "
     "ShareLock on transaction {n} | the inventory update was aborted because of a lock cycle | transaction "
     "{hex} rolled back: deadlock", "update_inventory", "DeadlockDetected: deadlock detected",
     "The stock update failed; please try again."),
    ("sql_syntax", "ProgrammingError", "syntax error at or near \"FROM\" at character {n} in generated SQL | "
     "the SQL the model wrote does not parse: unexpected token near line {n} | invalid SQL generated for the report "
     "query", "run_sql", "ProgrammingError: syntax error at or near \"WHERE\"",
     "I wasn't able to build the report query. | The report could not be generated."),
    ("sql_unknown_column", "ProgrammingError", "column \"customer_name\" does not exist in table customers | the "
     "query references a column that is not in the schema: revenue_total | no such column: order_date_utc",
     "run_sql", "ProgrammingError: column does not exist", "The report refers to data we don't have."),
    ("auth_invalid_key", "AuthenticationError", "Error code: 401 - Incorrect API key provided: sk-{id} | the "
     "provider rejected our credentials: invalid api key | authentication failed, the API key is revoked or wrong",
     None, "", SORRY),
    ("oauth_expired", "TokenExpiredError", "the Google Calendar access token expired at {ts} | refresh of the "
     "OAuth token for user {id} failed: invalid_grant | calendar credentials are no longer valid, re-consent "
     "required", "create_event", "TokenExpiredError: token expired at {ts}",
     "I need you to reconnect your calendar before I can add the event. | Your calendar access has expired."),
    ("email_smtp", "SMTPException", "SMTP server smtp.mail.example.com refused the message: 550 mailbox unavailable "
     "| send_email failed: recipient address rejected | the mail relay bounced the message to {email}",
     "send_email", "SMTPRecipientsRefused: {email} | SMTPException: 550 rejected",
     "I couldn't send the email to that address. | The message to {email} bounced."),
    ("email_attachment_too_big", "MessageTooLarge", "attachment of {n} MB exceeds the {n} MB mail size limit | "
     "send_email rejected: message size too large | the report PDF is too big to attach",
     "send_email", "MessageTooLarge: size limit exceeded", "The report was too large to email."),
    ("code_exec_timeout", "SandboxTimeout", "python sandbox killed the script after {n}s of CPU time | code "
     "execution exceeded its time budget of {n} seconds | the generated script ran too long and was terminated",
     "run_python", "SandboxTimeout: killed after {n}s", "My calculation took too long to finish."),
    ("code_exec_import", "ModuleNotFoundError", "No module named 'pandas' in the sandbox | the script imports "
     "matplotlib, which is not installed | ImportError: cannot import name 'DataFrame'", "run_python",
     "ModuleNotFoundError: No module named 'pandas'", "I couldn't run the analysis: a library is missing."),
    ("code_exec_zero_div", "ZeroDivisionError", "division by zero in generated code at line {n} | the averaging "
     "step divided by an empty count | float division by zero while computing growth rate", "run_python",
     "ZeroDivisionError: division by zero", "The numbers gave a division by zero; I couldn't compute the average."),
    ("vector_store_down", "ConnectionError", "vector store at {url} unavailable: 503 Service Unavailable | "
     "the retrieval index did not answer (HTTP 503) | similarity search failed, the embeddings service is down",
     "retrieve_docs", "ConnectionError: 503 from {url}", "I couldn't search the knowledge base right now."),
    ("retrieval_empty", None, "I could not find anything about {topic} in the documentation. | The knowledge base "
     "has no information on {topic}. | There is nothing in our docs about {topic}, sorry."),
    ("wrong_currency", None, "The total comes to {n} dollars. | That will be ${n} in total. | Your order costs "
     "{n} USD."),
    ("refusal", None, "I'm sorry, but I can't help with that request. | I am not able to assist with this. | "
     "Unfortunately this is something I cannot do."),
    ("payment_declined", "CardError", "Your card was declined (decline_code: insufficient_funds) | the payment "
     "processor declined charge ch_{id} | card_declined: do_not_honor for customer cus_{id}", "charge_card",
     "CardError: card declined", "Your payment didn't go through; please use another card."),
    ("payment_idempotency", "IdempotencyError", "Keys for idempotent requests can only be used with the same "
     "parameters they were first used with (key {hex}) | a retried charge reused an idempotency key with different "
     "amounts | idempotency key conflict on charge", "charge_card", "IdempotencyError: key reused",
     "The payment could not be retried safely."),
    ("booking_unavailable", "SoldOutError", "no rooms available in {city} for the requested dates | the hotel "
     "inventory returned zero vacancies for {city} | every property in {city} is fully booked on {date}",
     "book_hotel", "SoldOutError: no availability", "All hotels in {city} are full on {date}."),
    ("booking_bad_dates", "ValidationError", "check-out date {date} is before check-in | invalid stay: the nights "
     "count is negative | booking request rejected, end date precedes start date", "book_hotel",
     "ValidationError: check_out must be after check_in", "The dates you gave don't make sense for a stay."),
    ("schema_validation", "ValidationError", "1 validation error for WeatherArgs: city field required | tool "
     "arguments failed validation: missing required property 'city' | the model called get_weather without the "
     "city argument", "get_weather", "ValidationError: field required", SORRY),
    ("tool_not_found", "ToolNotFoundError", "the model called a tool named 'get_wether' that does not exist | "
     "unknown tool 'search_flight' requested by the model | no tool called 'book_hotels' is registered",
     None, "", SORRY),
    ("json_mode_broken", "OutputParserException", "could not parse the model's reply as the Answer schema | "
     "the LLM output is not valid JSON for the structured answer | Failed to parse Answer from completion",
     None, "", SORRY),
    ("content_filter", "ContentFilterError", "the response was filtered due to the prompt triggering the content "
     "management policy | completion blocked by the safety filter (category: violence) | finish_reason "
     "content_filter: output withheld", None, "", "I can't provide that content."),
    ("model_overloaded", "APIStatusError", "Error code: 529 - the model is overloaded, please retry | "
     "overloaded_error: the provider has too much traffic right now | server busy: model capacity exhausted",
     None, "", SORRY),
    ("provider_500", "InternalServerError", "Error code: 500 - The server had an error while processing your "
     "request | upstream model API returned HTTP 500 internal error | the LLM provider failed with a 500",
     None, "", SORRY),
    ("dns_failure", "ConnectError", "[Errno -3] Temporary failure in name resolution for {host} | could not "
     "resolve host {host} | DNS lookup of {host} failed", "fetch_url", "ConnectError: name resolution failed",
     "I couldn't reach that website."),
    ("ssl_error", "SSLError", "certificate verify failed: unable to get local issuer certificate ({host}) | "
     "TLS handshake with {host} failed: certificate has expired | SSL: CERTIFICATE_VERIFY_FAILED for {host}",
     "fetch_url", "SSLError: certificate verify failed", "The site's security certificate is invalid."),
    ("http_404_fetch", "HTTPStatusError", "Client error '404 Not Found' for url '{url}' | the page {url} does not "
     "exist (HTTP 404) | fetch_url got status 404 for {url}", "fetch_url", "HTTPStatusError: 404 Not Found",
     "The page you linked doesn't exist anymore."),
    ("http_403_fetch", "HTTPStatusError", "Client error '403 Forbidden' for url '{url}' | access to {url} is "
     "forbidden (HTTP 403) | the site blocked our crawler with status 403", "fetch_url",
     "HTTPStatusError: 403 Forbidden", "That website doesn't allow me to read it."),
    ("scrape_empty", "ExtractionError", "readability found no article text on the page | the fetched HTML had "
     "no main content to extract | page body empty after removing scripts and navigation", "fetch_url",
     "ExtractionError: empty content", "I couldn't read any content on that page."),
    ("pdf_parse", "PdfReadError", "EOF marker not found while reading {path} | the PDF {path} is encrypted and "
     "cannot be parsed | could not extract text from the scanned PDF", "read_pdf", "PdfReadError: EOF marker not "
     "found", "I couldn't read that PDF."),
    ("csv_encoding", "UnicodeDecodeError", "'utf-8' codec can't decode byte {hex} in position {n}: invalid start "
     "byte | the CSV {path} is not UTF-8 encoded | decoding the spreadsheet export failed at byte {n}",
     "read_file", "UnicodeDecodeError: invalid start byte", "The file uses an encoding I can't read."),
    ("disk_full", "OSError", "[Errno 28] No space left on device: '{path}' | writing the export to {path} failed, "
     "the disk is full | cannot save the report: no space left", "write_file", "OSError: [Errno 28] No space left",
     "I couldn't save the file: the disk is full."),
    ("permission_denied_write", "PermissionError", "[Errno 13] Permission denied: '{path}' | write_file may not "
     "write to {path} | the agent lacks write access to the output folder", "write_file",
     "PermissionError: [Errno 13] Permission denied", "I am not allowed to write there."),
    ("oom_worker", "MemoryError", "the worker ran out of memory while loading {n} rows | process killed by the "
     "OOM killer (RSS {n} MB) | MemoryError while building the embeddings matrix", "run_python",
     "MemoryError", "The job ran out of memory."),
    ("calendar_conflict", "ConflictError", "the slot {ts} overlaps an existing meeting | create_event refused: "
     "attendee {email} is busy at that time | double booking detected for {date}", "create_event",
     "ConflictError: time slot taken", "That time is already taken in your calendar."),
    ("timezone_wrong", None, "Your meeting is set for {n}:00 UTC, which is {n}:00 in {city}. | I scheduled the "
     "call at {n} am {city} time. | The event starts at {n}:00 local time in {city}."),
    ("translation_wrong_lang", None, "Voici la traduction en allemand : {topic}. | Aquí está el resumen en inglés: "
     "{topic}. | Ecco la risposta in francese: {topic}."),
    ("summary_too_long", None, "Here is a detailed summary of the {topic} document covering every section in "
     "depth, including background, methods, results and an extended discussion of each point. | Below is an "
     "exhaustive, section by section summary of {topic} with all details kept."),
    ("math_wrong", None, "The answer is {n}. | After adding them up I get {n}. | So the result is {n}."),
    ("stale_price", None, "The current price of {topic} is {n} euros (as of last year). | {topic} costs about {n} "
     "EUR according to my training data."),
    ("search_no_results", "EmptyResultError", "web_search returned 0 results for the query | the search API found "
     "no pages matching '{topic}' | no hits for {topic}", "web_search", "EmptyResultError: no results",
     "I couldn't find anything online about {topic}."),
    ("search_quota", "QuotaExceeded", "search API daily quota of {n} queries exhausted | web_search: 429 daily "
     "limit reached for key {id} | the search provider's free tier limit was hit", "web_search",
     "QuotaExceeded: daily limit", "I can't search the web any more today."),
    ("maps_invalid_key", "RequestDenied", "The provided API key is invalid for the Directions API | maps request "
     "denied: API key not authorized for this service | REQUEST_DENIED from the geocoding service",
     "get_directions", "RequestDenied: invalid key", "I can't get directions right now."),
    ("route_not_found", "NoRouteError", "no driving route between {city} and {city} | directions service found "
     "no path between the two points | ZERO_RESULTS for the route to {city}", "get_directions",
     "NoRouteError: zero results", "I couldn't find a route to {city}."),
    ("crm_record_missing", "NotFoundError", "contact {id} not found in the CRM | the customer record {id} has been "
     "deleted | lookup_contact: no contact with id {id}", "lookup_contact", "NotFoundError: contact not found",
     "I can't find that customer in the CRM."),
    ("crm_field_invalid", "ValidationError", "phone number '{n}' is not valid E.164 | update_contact rejected the "
     "email field: malformed address | the CRM refused the record: invalid postal code", "update_contact",
     "ValidationError: invalid field", "I couldn't update the contact: a field was invalid."),
    ("ticket_dup", "DuplicateError", "a ticket with the same title already exists ({id}) | create_ticket refused "
     "a duplicate issue | duplicate detected: ticket {id} is already open", "create_ticket",
     "DuplicateError: ticket exists", "That issue is already filed."),
    ("git_merge_conflict", "GitCommandError", "merge conflict in {path} | automatic merge failed; fix conflicts "
     "and then commit the result | git could not rebase: conflict in {path}", "git", "GitCommandError: conflict",
     "I hit a merge conflict and stopped."),
    ("tests_failed", "AssertionError", "{n} tests failed after the change: test_{id} | pytest reported failures "
     "in {path} | the test suite is red: assertion failed in test_parse", "run_tests",
     "AssertionError: tests failed", "My change broke {n} tests."),
    ("lint_failed", "LintError", "ruff found {n} errors: E501 line too long | flake8: unused import in {path} | "
     "mypy: incompatible types in assignment at {path}", "run_lint", "LintError: checks failed",
     "The code does not pass the linters yet."),
    ("docker_pull", "ImageNotFound", "pull access denied for myorg/worker, repository does not exist | manifest "
     "for image {id} not found | docker could not pull the image: unauthorized", "docker_run",
     "ImageNotFound: pull access denied", "I couldn't start the container."),
    ("k8s_crashloop", "PodError", "pod worker-{id} is in CrashLoopBackOff | the deployment's pods keep restarting "
     "(back-off restarting failed container) | container exited with code 137, restarting", "kubectl",
     "PodError: CrashLoopBackOff", "The service keeps crashing after deploy."),
    ("s3_access_denied", "ClientError", "An error occurred (AccessDenied) when calling the PutObject operation | "
     "s3 upload to bucket reports denied access | the IAM role may not write to the bucket", "upload_file",
     "ClientError: AccessDenied", "I don't have permission to upload there."),
    ("s3_no_such_key", "ClientError", "An error occurred (NoSuchKey) when calling the GetObject operation: the "
     "specified key does not exist | object {path} missing from the bucket | download failed: no such key {path}",
     "download_file", "ClientError: NoSuchKey", "The file isn't in storage."),
    ("slack_channel", "SlackApiError", "channel_not_found when posting to #{topic} | the bot is not in channel "
     "{id} | not_in_channel: invite the app first", "post_message", "SlackApiError: channel_not_found",
     "I couldn't post to that channel."),
    ("slack_rate", "SlackApiError", "ratelimited: retry after {n} seconds | Slack throttled chat.postMessage | "
     "too many messages to the channel, slow down", "post_message", "SlackApiError: ratelimited",
     "Slack is throttling my messages."),
    ("image_gen_policy", "ImagePolicyError", "your request was rejected as a result of our safety system | image "
     "prompt flagged by moderation | the image model refused the prompt", "generate_image",
     "ImagePolicyError: rejected", "I can't create that image."),
    ("image_too_large", "ImageSizeError", "requested size {n}x{n} is not supported | the image must be at most "
     "{n} pixels wide | invalid dimensions for image generation", "generate_image", "ImageSizeError: unsupported "
     "size", "That image size isn't supported."),
    ("audio_format", "UnsupportedFormat", "audio file format .m4a not supported by the transcriber | could not "
     "decode the recording: unknown codec | transcribe failed: sample rate {n} Hz unsupported", "transcribe",
     "UnsupportedFormat", "I can't transcribe that recording."),
    ("ocr_blurry", None, "The text in the image is too blurry for me to read reliably. | I can't make out the "
     "writing in this photo. | The scan quality is too low to extract the text."),
    ("loop_same_tool", "LoopDetectedError", "the agent called search_docs with identical arguments {n} times in a "
     "row | loop detected: repeated tool call without progress | stopping, the same action was repeated {n} times",
     None, "", "I got stuck repeating the same search."),
    ("handoff_failed", "HandoffError", "handoff to agent 'billing' failed: agent not registered | could not "
     "transfer the conversation to the refunds agent | no agent named 'support_tier2' for handoff", None, "",
     "I couldn't pass you to the right team."),
    ("guardrail_pii", "GuardrailTripwire", "output guardrail tripped: response contains an email address | the "
     "PII filter blocked the answer (phone number detected) | guardrail pii_check triggered on the final output",
     None, "", "I can't share personal details."),
    ("embedding_dim", "ValueError", "embedding dimension {n} does not match index dimension {n} | vector size "
     "mismatch when upserting into the collection | the index expects {n}-dim vectors", "upsert_vectors",
     "ValueError: dimension mismatch", SORRY),
]
MORE = tuple(_f(*entry) for entry in _MORE)
FAMILIES = CORE + MORE

TOPICS = ("quarterly revenue", "the refund policy", "onboarding", "SSO setup", "the API limits", "GDPR",
          "the mobile app", "pricing tiers", "invoice export", "the roadmap", "bitcoin", "gold", "the Q3 report")
HOSTS = ("api.weather.example.com", "flights.example.net", "search.example.org", "vectors.internal", "docs.acme.io",
         "news.example.com")
NOISE_WORDS = ("cache", "widget", "parser", "queue", "shard", "render", "thumbnail", "locale", "cron", "webhook",
               "batch", "replica", "socket", "buffer", "plugin", "sandbox", "registry", "manifest", "cursor",
               "token", "payload", "session", "cluster", "mirror", "pipeline", "ledger", "quota", "badge",
               "checksum", "font", "glyph", "macro", "sprite", "tensor", "kernel", "driver", "firmware", "codec")
NOISE_TYPES = ("RuntimeError", "AssertionError", "KeyError", "IndexError", "AttributeError", "TypeError",
               "NotImplementedError", "RecursionError", "BrokenPipeError", "InterruptedError")


DIRS = ("srv", "data", "tmp", "home", "app", "exports", "reports", "user")


def _fill(template: str, rng: random.Random, family_host: str) -> str:
    hexdigits = "0123456789abcdef"
    values = {
        "n": lambda: str(rng.choice((rng.randint(1, 9), rng.randint(10, 999), rng.randint(1000, 200000)))),
        "id": lambda: "".join(rng.choices(string.ascii_lowercase + string.digits, k=rng.randint(6, 14))) + str(
            rng.randint(0, 9)),
        "hex": lambda: "".join(rng.choices(hexdigits, k=rng.choice((8, 16, 32)))) + "a1",
        "path": lambda: ("/" + "/".join(rng.choices(DIRS, k=rng.randint(2, 4)))
                         + f"/{rng.randint(1, 99999)}.{rng.choice(('csv', 'pdf', 'json', 'txt', 'py'))}"),
        "ts": lambda: (START + dt.timedelta(seconds=rng.randint(0, 10**7))).isoformat().replace("+00:00", "Z"),
        "date": lambda: (START + dt.timedelta(days=rng.randint(0, 400))).strftime("%B %d"),
        "url": lambda: (f"https://{family_host}/v{rng.randint(1, 3)}/{rng.choice(('q', 'items', 'run'))}"
                        f"/{rng.randint(1, 10**6)}?req={rng.randint(1, 10**9)}"),
        "ip": lambda: ".".join(str(rng.randint(1, 254)) for _ in range(4)),
        "email": lambda: f"{rng.choice(('ana', 'bob', 'li', 'sam', 'kim'))}{rng.randint(1, 999)}@example.com",
        "host": lambda: family_host,
        "city": lambda: rng.choice(CITIES),
        "topic": lambda: rng.choice(TOPICS),
    }
    out = template
    while "{" in out:
        start = out.index("{")
        end = out.index("}", start)
        key = out[start + 1:end]
        out = out[:start] + (values[key]() if key in values else key) + out[end + 1:]
    return out


def _run(family: Family, rng: random.Random) -> dict[str, object]:
    host = HOSTS[zlib.crc32(family.name.encode()) % len(HOSTS)]
    if family.error_type is None:   # a low score: the answer is the failure
        return {"status": "ok", "error_type": None, "error_message": None, "failing_tools": None,
                "output": _fill(rng.choice(family.messages), rng, host), "score": round(rng.uniform(0.0, 0.45), 2)}
    tools = None
    if family.tool and family.tool_errors and rng.random() < 0.8:
        tools = f"{family.tool}: {_fill(rng.choice(family.tool_errors), rng, host)}"
    output = _fill(rng.choice(family.outputs), rng, host) if family.outputs and rng.random() < 0.9 else None
    message = _fill(rng.choice(family.messages), rng, host)
    return {"status": "error", "error_type": family.error_type, "error_message": message,
            "failing_tools": tools, "output": output, "score": None}


# One-off failures, each unlike the others and unlike the families: noise a clustering
# must leave unclustered. Used once each before the random ones below.
ONE_OFFS = (
    ("RecursionError", "maximum recursion depth exceeded while pickling the session graph"),
    ("UnicodeEncodeError", "'latin-1' codec can't encode the emoji in the invoice customer name"),
    ("KeyboardInterrupt", "the operator pressed Ctrl-C during the nightly reconciliation"),
    ("LicenseError", "the PDF rendering library's trial license expired"),
    ("ClockSkewError", "the signing server's clock is eleven minutes ahead of ours"),
    ("AssertionError", "the shopping cart total went negative after applying two coupons"),
    ("GPUError", "CUDA driver version is insufficient for the CUDA runtime version"),
    ("BarcodeError", "the scanned barcode checksum does not match the product catalogue"),
    ("LocaleError", "the Thai Buddhist calendar is not supported by the date picker"),
    ("AudioError", "the microphone was muted by the operating system privacy settings"),
    ("WeatherAlertError", "a volcanic ash warning closed the airspace the itinerary used"),
    ("ChessEngineError", "the board position sent to the engine had two white kings"),
    ("FontError", "the Devanagari glyphs are missing from the embedded report font"),
    ("PrinterError", "the label printer ran out of thermal paper halfway through the batch"),
    ("QuantumError", "the simulator refused a circuit with more than thirty qubits"),
    ("GeneticsError", "the DNA sequence file contains characters other than A, C, G and T"),
    ("ElevatorError", "the building API reports the freight lift is under maintenance"),
    ("RecipeError", "the recipe converter cannot turn a pinch of saffron into grams"),
    ("SatelliteError", "no satellite imagery is available for the poles at that resolution"),
    ("MusicError", "the MIDI file uses a time signature of thirteen eighths the player rejects"),
)


def _noise(rng: random.Random, index: int) -> dict[str, object]:
    """A one-off failure: an error no other run shares (ONE_OFFS first, then random)."""
    if index < len(ONE_OFFS):
        error_type, message = ONE_OFFS[index]
    else:
        error_type = rng.choice(NOISE_TYPES)
        message = "unexpected " + " ".join(rng.sample(NOISE_WORDS, rng.randint(4, 8)))
    return {"status": "error", "error_type": error_type, "error_message": message,
            "failing_tools": None, "output": None, "score": None}


def _success(rng: random.Random) -> dict[str, object]:
    return {"status": "ok", "error_type": None, "error_message": None, "failing_tools": None,
            "output": f"The weather in {rng.choice(CITIES)} is sunny, {rng.randint(5, 30)} degrees.",
            "score": rng.choice((None, round(rng.uniform(0.6, 1.0), 2)))}


def planted_failures(families: Sequence[Family] = CORE, per_family: int | Sequence[int] = 40, *, noise: int = 0,
                     successes: int = 0, agent: str = "agent", seed: int = 0, start: dt.datetime = START,
                     days: float = 7.0, first_trace: int = 0) -> pl.DataFrame:
    """Runs of ``agent``: ``per_family`` failures of each family (one count, or one per
    family), ``noise`` one-off failures and ``successes`` good runs, in random order,
    over ``days`` from ``start``. Columns: those ``cluster_failures`` reads, plus
    ``family`` (the truth). Trace ids are ``first_trace``, ``first_trace + 1``, … in hex."""
    rng = random.Random(seed)
    counts = [per_family] * len(families) if isinstance(per_family, int) else list(per_family)
    plan: list[tuple[str, dict[str, object]]] = []
    for family, count in zip(families, counts):
        plan += [(family.name, _run(family, rng)) for _ in range(count)]
    plan += [("noise", _noise(rng, i)) for i in range(noise)]
    plan += [("success", _success(rng)) for _ in range(successes)]
    rng.shuffle(plan)
    span_us = int(days * 86_400_000_000)
    rows = []
    for i, (family_name, run) in enumerate(plan):
        when = start + dt.timedelta(microseconds=rng.randrange(span_us))
        rows.append({"trace_id": f"{first_trace + i:032x}", "agent": agent, "start_time": when, **run,
                     "family": family_name})
    return pl.DataFrame(rows, schema={"trace_id": pl.String, "agent": pl.String, "start_time": pl.Datetime("us", "UTC"),
                                      "status": pl.String, "error_type": pl.String, "error_message": pl.String,
                                      "failing_tools": pl.String, "output": pl.String, "score": pl.Float64,
                                      "family": pl.String})


def as_agent_runs(frame: pl.DataFrame, agent: str = "support-bot", task: str = "Plan my trip.") -> list[Run]:
    """The planted runs of ``frame`` as ``agent_runs.Run``s of ``agent``, to be sent through
    a real collector by the real OTel SDK (``agent_runs.send_runs``)."""
    runs = []
    for r in frame.iter_rows(named=True):
        tool, _, tool_error = (r["failing_tools"] or "").partition(": ")
        runs.append(Run(agent, task, r["output"], error=r["error_message"],
                        error_type=r["error_type"] or "RuntimeError", tool=tool or None, tool_error=tool_error or None))
    return runs
