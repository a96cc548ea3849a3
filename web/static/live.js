// The live dashboard (docs/web.md "Live dashboard"): one WebSocket per page, to the URL in
// the data-live-url attribute of the page's #live section; messages are JSON (span, run,
// score). Every value goes into the page through textContent or a data- attribute, never
// as markup. Without JavaScript the page is complete, only not live.
(function () {
  "use strict";
  var section = document.getElementById("live");
  if (!section || !section.dataset.liveUrl || !window.WebSocket) return;
  var events = document.getElementById("live-events");
  var runs = document.getElementById("live-runs");
  var state = document.getElementById("live-state");
  var MAX_EVENTS = 200, MAX_RUNS = 50, MAX_RETRY_MS = 30000;
  var retryMs = 1000;
  section.hidden = false;

  function setState(name, text) {
    section.dataset.state = name;
    if (state) state.textContent = text;
  }

  function el(tag, text, cls) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (cls) node.className = cls;
    return node;
  }

  function ms(v) {
    if (v === null || v === undefined) return "";
    return v >= 1000 ? (v / 1000).toFixed(2) + " s" : v.toFixed(1) + " ms";
  }

  function clock(v) {
    return v === null || v === undefined ? "" : new Date(v).toISOString().slice(11, 23);
  }

  function prepend(list, item, max) {
    list.insertBefore(item, list.firstChild);
    while (list.children.length > max) list.removeChild(list.lastChild);
  }

  function span(m) {
    if (!events) return;
    var li = el("li", null, "live-span");
    li.dataset.type = "span";
    li.dataset.trace = m.trace_id;
    li.dataset.span = m.span_id;
    li.dataset.spanType = m.span_type || "";
    li.dataset.status = m.status || "";
    li.appendChild(el("time", clock(m.start_ms), "muted"));
    li.appendChild(el("span", " " + (m.span_type || "span") + " ", "muted"));
    var link = el("a", m.name);
    link.href = "/runs/" + encodeURIComponent(m.trace_id);
    li.appendChild(link);
    li.appendChild(el("span", " " + ms(m.duration_ms), "num"));
    var detail = [m.model, m.tool].filter(Boolean).join(" · ");
    if (m.input_tokens !== null || m.output_tokens !== null) {
      detail += " " + (m.input_tokens || 0) + "→" + (m.output_tokens || 0) + " tok";
    }
    if (detail) li.appendChild(el("span", " " + detail, "muted"));
    if (m.status === "error") {
      li.appendChild(el("strong", " error " + [m.error_type, m.error_message].filter(Boolean).join(": ")));
    }
    (m.events || []).forEach(function (e) {
      li.appendChild(el("span", " [" + e.name + (e.offset_ms !== null ? " +" + ms(e.offset_ms) : "") + "]", "muted"));
    });
    prepend(events, li, MAX_EVENTS);
  }

  // an item of #live-runs: when, the agent (a link to the run), what happened
  function entry(li, type, m, at, what) {
    while (li.firstChild) li.removeChild(li.firstChild);
    li.dataset.type = type;
    li.dataset.trace = m.trace_id;
    li.dataset.agent = m.agent;
    var link = el("a", m.agent);
    link.href = "/runs/" + encodeURIComponent(m.trace_id);
    li.appendChild(el("time", clock(at), "muted"));
    li.appendChild(document.createTextNode(" "));
    li.appendChild(link);
    li.appendChild(el("span", " " + what, "live-status"));
  }

  function run(m) {
    if (runs) {
      var li = null;
      for (var i = 0; i < runs.children.length; i++) {
        if (runs.children[i].dataset.trace === m.trace_id) { li = runs.children[i]; break; }
      }
      var fresh = !li;
      if (fresh) li = el("li", null, "live-run");
      entry(li, "run", m, m.start_ms, m.status + (m.duration_ms !== null ? " " + ms(m.duration_ms) : ""));
      li.dataset.status = m.status;
      if (fresh) prepend(runs, li, MAX_RUNS);
    }
    if (m.status === "running") return;
    // the leaderboard's row of this agent counts one more run (the figures stay the lake's)
    var rows = document.querySelectorAll("tr[data-agent]");
    for (var j = 0; j < rows.length; j++) {
      if (rows[j].dataset.agent !== m.agent) continue;
      var cell = rows[j].querySelector("[data-live=runs]");
      if (cell) cell.textContent = String((parseInt(cell.textContent, 10) || 0) + 1);
      rows[j].dataset.lastStatus = m.status;
    }
  }

  function score(m) {
    if (!runs) return;
    var li = el("li", null, "live-score");
    entry(li, "score", m, m.judged_at_ms, "judged " + Number(m.score).toFixed(2) + " by " + m.judge_model);
    prepend(runs, li, MAX_RUNS);
  }

  function connect() {
    var url = new URL(section.dataset.liveUrl, window.location.href);
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    setState("connecting", "connecting…");
    var ws = new WebSocket(url.href);
    ws.onopen = function () { retryMs = 1000; setState("open", "connected"); };
    ws.onmessage = function (e) {
      var m;
      try { m = JSON.parse(e.data); } catch (err) { return; }
      if (m.type === "span") span(m);
      else if (m.type === "run") run(m);
      else if (m.type === "score") score(m);
    };
    ws.onclose = function () {
      setState("closed", "disconnected; retrying in " + Math.round(retryMs / 1000) + " s");
      window.setTimeout(connect, retryMs);
      retryMs = Math.min(retryMs * 2, MAX_RETRY_MS);
    };
  }

  connect();
})();
