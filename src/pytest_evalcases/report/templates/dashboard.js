// Dashboard behaviour: filters (also from the URL hash), sorting, row details.
// Reads only data- attributes and text; never writes HTML, so case data stays inert.
(function () {
  "use strict";
  var table = document.getElementById("cases");
  if (!table) { return; }
  var tbody = table.tBodies[0];
  var rows = Array.prototype.slice.call(tbody.querySelectorAll("tr.case"));
  var controls = {
    outcome: document.getElementById("f-outcome"),
    category: document.getElementById("f-category"),
    stage: document.getElementById("f-stage"),
    q: document.getElementById("f-q")
  };
  var attr = { outcome: "outcome", category: "category", stage: "firstFailure" };
  var state = { outcome: "", category: "", stage: "", q: "" };
  var shownEl = document.getElementById("shown");

  function detailOf(row) {
    var next = row.nextElementSibling;
    return next && next.classList.contains("detail") ? next : null;
  }

  // Search text per row, computed once (row plus its details).
  var haystack = new Map();
  rows.forEach(function (row) {
    var d = detailOf(row);
    haystack.set(row, (row.textContent + " " + (d ? d.textContent : "")).toLowerCase());
  });

  function matches(row) {
    for (var key in attr) {
      var want = state[key];
      if (!want) { continue; }
      if (want === "-") { want = ""; }  // "(none)": no category / no failing stage
      if (row.dataset[attr[key]] !== want) { return false; }
    }
    var q = state.q.trim().toLowerCase();
    return !q || haystack.get(row).indexOf(q) !== -1;
  }

  function apply() {
    var shown = 0;
    rows.forEach(function (row) {
      var ok = matches(row);
      row.hidden = !ok;
      var d = detailOf(row);
      if (d) { d.hidden = !ok || !row.classList.contains("open"); }
      if (ok) { shown += 1; }
    });
    shownEl.textContent = shown + " of " + rows.length + " cases";
    document.documentElement.setAttribute("data-visible-cases", String(shown));
  }

  // An address is typed, pasted or cut short by hand: "#q=100%" or a broken UTF-8 escape must
  // not throw (a throw here stopped filters, sorting and details). Decode what can be decoded:
  // a "%" that starts no escape is kept as text; if the rest still fails, the raw text is used.
  function decodePart(text) {
    try { return decodeURIComponent(text); } catch (e) { /* fall through */ }
    try {
      return decodeURIComponent(text.replace(/%(?![0-9A-Fa-f]{2})/g, "%25"));
    } catch (e) {
      return text;
    }
  }

  function readHash() {
    var hash = window.location.hash.replace(/^#/, "");
    Object.keys(state).forEach(function (k) { state[k] = ""; });
    hash.split("&").forEach(function (part) {
      if (!part) { return; }
      var i = part.indexOf("=");
      var key = decodePart(i < 0 ? part : part.slice(0, i));
      var value = i < 0 ? "" : decodePart(part.slice(i + 1).replace(/\+/g, " "));
      if (Object.prototype.hasOwnProperty.call(state, key)) { state[key] = value; }
    });
    Object.keys(controls).forEach(function (k) { if (controls[k]) { controls[k].value = state[k]; } });
  }

  function writeHash() {
    try {  // encodeURIComponent throws on a lone surrogate: then the address stays as it was
      var parts = Object.keys(state).filter(function (k) { return state[k]; }).map(function (k) {
        return encodeURIComponent(k) + "=" + encodeURIComponent(state[k]);
      });
      var url = window.location.pathname + window.location.search + (parts.length ? "#" + parts.join("&") : "");
      window.history.replaceState(null, "", url);
    } catch (e) { /* file:// quirks, or text that cannot be encoded */ }
  }

  Object.keys(controls).forEach(function (k) {
    var el = controls[k];
    if (!el) { return; }
    el.addEventListener(k === "q" ? "input" : "change", function () {
      state[k] = el.value;
      writeHash();
      apply();
    });
  });
  document.getElementById("filters").addEventListener("submit", function (e) { e.preventDefault(); });
  window.addEventListener("hashchange", function () { readHash(); apply(); });

  // Row click toggles its detail row (text selection inside details is unaffected).
  tbody.addEventListener("click", function (e) {
    var row = e.target.closest("tr.case");
    if (!row) { return; }
    var d = detailOf(row);
    var open = !row.classList.contains("open");
    row.classList.toggle("open", open);
    if (d) { d.hidden = !open; }
    var btn = row.querySelector("button.toggle");
    if (btn) { btn.setAttribute("aria-expanded", String(open)); }
  });

  // Sorting: numbers numerically (blanks last), text with localeCompare.
  var headers = Array.prototype.slice.call(table.tHead.querySelectorAll("th[data-col]"));
  headers.forEach(function (th) {
    th.addEventListener("click", function () {
      var col = Number(th.dataset.col);
      var numeric = th.dataset.type === "num";
      var dir = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
      headers.forEach(function (h) { h.setAttribute("aria-sort", "none"); });
      th.setAttribute("aria-sort", dir === 1 ? "ascending" : "descending");
      var keyed = rows.map(function (row) {
        var v = row.cells[col].dataset.sort || "";
        return { row: row, detail: detailOf(row), v: v, n: Number(row.dataset.n) };
      });
      keyed.sort(function (a, b) {
        var c;
        if (numeric) {
          if (a.v === "" || b.v === "") { c = (a.v === "") - (b.v === ""); return c || a.n - b.n; }
          c = (Number(a.v) - Number(b.v)) * dir;
        } else {
          c = a.v.localeCompare(b.v) * dir;
        }
        return c || a.n - b.n;
      });
      keyed.forEach(function (k) {
        tbody.appendChild(k.row);
        if (k.detail) { tbody.appendChild(k.detail); }
      });
      rows = keyed.map(function (k) { return k.row; });
    });
  });

  readHash();
  apply();
  // Marker for tests and tooling: the script ran to the end.
  document.documentElement.setAttribute("data-dashboard-ready", "1");
}());
