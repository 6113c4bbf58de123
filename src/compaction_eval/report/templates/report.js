(function () {
  "use strict";

  // Sortable tables: click a header with data-sort; cells carry their value in data-v.
  function cellValue(row, index) {
    var cell = row.cells[index];
    if (!cell) return null;
    var v = cell.getAttribute("data-v");
    if (v === null) v = cell.textContent.trim();
    if (v === "") return null;
    var n = Number(v);
    return isNaN(n) ? v.toLowerCase() : n;
  }
  function sortTable(table, th) {
    var index = Array.prototype.indexOf.call(th.parentNode.children, th);
    // a second click reverses; a first click sorts names and ranks up, numbers down
    var current = th.getAttribute("aria-sort");
    var descending = current ? current !== "descending" :
      !(th.getAttribute("data-sort") === "text" || th.getAttribute("data-first") === "asc");
    table.querySelectorAll("th[data-sort]").forEach(function (other) { other.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", descending ? "descending" : "ascending");
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = cellValue(a, index), y = cellValue(b, index);
      if (x === null && y === null) return 0;
      if (x === null) return 1;  // missing values last, both ways
      if (y === null) return -1;
      var c = x < y ? -1 : x > y ? 1 : 0;
      return descending ? -c : c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    table.querySelectorAll("th[data-sort]").forEach(function (th) {
      th.tabIndex = 0;
      th.addEventListener("click", function () { sortTable(table, th); });
      th.addEventListener("keydown", function (e) { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sortTable(table, th); } });
    });
  });

  // Drill-down: a sample's body lives in an inert <template> until it is first opened, so a
  // page with hundreds of samples only lays out what is looked at.
  function showSummary(body, pane, prompt) {
    var tpl = null;
    body.querySelectorAll("template[data-prompt]").forEach(function (t) {
      if (t.getAttribute("data-prompt") === prompt) tpl = t;
    });
    var target = pane.querySelector(".pane-body");
    target.replaceChildren(tpl ? tpl.content.cloneNode(true) : document.createTextNode(""));
  }
  function fill(details) {
    var body = details.querySelector(".sample-body");
    if (!body || body.getAttribute("data-filled")) return;
    var tpl = details.querySelector(":scope > template");
    body.appendChild(tpl.content.cloneNode(true));
    body.setAttribute("data-filled", "1");
    body.querySelectorAll(".pane").forEach(function (pane) {
      var select = pane.querySelector("select");
      showSummary(body, pane, select.value);
      select.addEventListener("change", function () { showSummary(body, pane, select.value); });
    });
  }
  document.querySelectorAll("details.sample").forEach(function (d) {
    d.addEventListener("toggle", function () { if (d.open) fill(d); });
  });
  function openFromHash() {
    var id = decodeURIComponent(location.hash.slice(1));
    var el = id && document.getElementById(id);
    if (el && el.matches("details.sample")) { el.open = true; fill(el); el.scrollIntoView(); }
  }
  window.addEventListener("hashchange", openFromHash);
  openFromHash();

  // Drill-down filter: by trace id (substring), and "only samples the best prompt lost facts in".
  var search = document.getElementById("sample-filter");
  var onlyLost = document.getElementById("sample-only-lost");
  var counter = document.getElementById("sample-count");
  function applyFilter() {
    var q = search ? search.value.trim().toLowerCase() : "";
    var lostOnly = onlyLost && onlyLost.checked;
    var shown = 0;
    document.querySelectorAll("details.sample").forEach(function (d) {
      var ok = (!q || d.getAttribute("data-search").indexOf(q) !== -1) &&
        (!lostOnly || Number(d.getAttribute("data-best-lost")) > 0);
      d.hidden = !ok;
      if (ok) shown += 1;
    });
    if (counter) counter.textContent = String(shown);
  }
  if (search) search.addEventListener("input", applyFilter);
  if (onlyLost) onlyLost.addEventListener("change", applyFilter);
  var expand = document.getElementById("sample-expand");
  if (expand) expand.addEventListener("click", function () {
    var open = expand.getAttribute("data-open") !== "1";
    document.querySelectorAll("details.sample:not([hidden])").forEach(function (d) { d.open = open; if (open) fill(d); });
    expand.setAttribute("data-open", open ? "1" : "0");
    expand.textContent = open ? "collapse all" : "expand all";
  });
})();
