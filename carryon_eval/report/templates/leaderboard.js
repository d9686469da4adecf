// The leaderboard's table: sort by any column on click (each comparability group on its own), show each model's
// 95% rank interval on that column, and show the paired between-model differences of the column sorted on with
// their adjusted verdicts. Plain DOM, no library; text
// goes in with textContent only.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("lb-data").textContent);
  var table = document.getElementById("leaderboard");
  var panel = document.getElementById("pairs");
  var state = {key: null, dir: 0};

  function cellValue(row, key) {
    if (key === "model") { return row.getAttribute("data-model"); }
    var td = row.querySelector('td[data-key="' + key + '"]');
    var v = td ? td.getAttribute("data-value") : "";
    return v === "" || v === null ? null : parseFloat(v);
  }

  function compare(key, dir) {
    return function (a, b) {
      var x = cellValue(a, key), y = cellValue(b, key);
      if (x === null && y === null) { return 0; }
      if (x === null) { return 1; }          // n/a always last
      if (y === null) { return -1; }
      if (typeof x === "string") { return dir * x.localeCompare(y); }
      return dir * (x - y);
    };
  }

  function fmt(x, digits) { return x === null || x === undefined ? "n/a" : (x >= 0 ? "+" : "") + x.toFixed(digits); }

  function td(text, cls) {
    var el = document.createElement("td");
    el.textContent = text;
    if (cls) { el.className = cls; }
    return el;
  }

  function pairOf(key, i, j) {
    var list = data.pairs[key] || [];
    for (var n = 0; n < list.length; n++) {
      var p = list[n];
      if (p.a === i && p.b === j) { return p; }
      if (p.a === j && p.b === i) {
        return {a: i, b: j, value: p.value === null ? null : -p.value, n: p.n, reason: p.reason,
                differs: p.differs, ci95: p.ci95 ? [-p.ci95[1], -p.ci95[0]] : null};
      }
    }
    return null;
  }

  function pairRow(letter, i, j, key, col) {
    var p = pairOf(key, i, j);
    var tr = document.createElement("tr");
    tr.className = "pair";
    tr.appendChild(td(letter));
    tr.appendChild(td(data.models[i] + " − " + data.models[j], "left"));
    tr.appendChild(td(p ? fmt(p.value, col.digits) : "n/a"));
    tr.appendChild(td(p && p.ci95 ? "[" + fmt(p.ci95[0], col.digits) + ", " + fmt(p.ci95[1], col.digits) + "]"
                                  : (p && p.reason ? p.reason : "n/a")));
    var verdict = p && p.differs !== null && p.differs !== undefined ? (p.differs ? "yes" : "no") : "n/a";
    tr.appendChild(td(p ? verdict + " (" + p.n + " queries)" : ""));
    return tr;
  }

  function showPairs(key) {
    var col = data.columns[key];
    var title = document.getElementById("pairs-title");
    var near = panel.querySelector("tbody");
    var all = document.querySelector("#pairs-all tbody");
    near.textContent = "";
    all.textContent = "";
    if (!col) { title.textContent = "Sort on a metric column to see its paired differences."; return; }
    title.textContent = "Paired differences on " + col.band + " " + col.label +
      " (row above minus row below in the current order, each group on its own)";
    if (!col.paired) {
      var tr = document.createElement("tr");
      tr.appendChild(td("Not available for this column: " + (col.note || "no per-query numbers"), "na"));
      tr.firstChild.colSpan = 5;
      near.appendChild(tr);
      return;
    }
    table.querySelectorAll("tbody.group").forEach(function (group) {
      var letter = group.getAttribute("data-group");
      var order = Array.prototype.map.call(group.querySelectorAll("tr.model"), function (row) {
        return parseInt(row.getAttribute("data-index"), 10);
      });
      for (var n = 0; n < order.length; n++) {
        if (n + 1 < order.length) { near.appendChild(pairRow(letter, order[n], order[n + 1], key, col)); }
        for (var m = n + 1; m < order.length; m++) { all.appendChild(pairRow(letter, order[n], order[m], key, col)); }
      }
    });
  }

  function rankText(row, key) {
    var r = (data.ranks[key] || {})[row.getAttribute("data-index")];
    if (!r || cellValue(row, key) === null) { return "–"; }
    return r[0] === r[1] ? String(r[0]) : r[0] + "-" + r[1];
  }

  function sortBy(key, dir) {
    table.querySelectorAll("tbody.group").forEach(function (group) {
      var rows = Array.prototype.slice.call(group.querySelectorAll("tr.model"));
      rows.sort(compare(key, dir));
      rows.forEach(function (row) {
        group.appendChild(row);
        row.querySelector("td.rank").textContent = group.hasAttribute("data-unranked") ? "–" : rankText(row, key);
      });
    });
    table.querySelectorAll("th[data-key]").forEach(function (th) {
      var on = th.getAttribute("data-key") === key;
      th.setAttribute("aria-sort", on ? (dir > 0 ? "ascending" : "descending") : "none");
    });
    state = {key: key, dir: dir};
    showPairs(key);
  }

  table.querySelectorAll("th[data-key]").forEach(function (th) {
    th.addEventListener("click", function () {
      var key = th.getAttribute("data-key");
      var first = th.getAttribute("data-better") === "lower" || key === "model" ? 1 : -1;
      sortBy(key, state.key === key ? -state.dir : first);
    });
  });
  sortBy(data.sort, -1);
}());
