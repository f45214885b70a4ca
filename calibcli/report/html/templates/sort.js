// Sort a table.sortable by the clicked header: numbers by data-value, text otherwise; click again to reverse.
document.querySelectorAll("table.sortable").forEach(function (table) {
  table.querySelectorAll("th").forEach(function (th, col) {
    th.tabIndex = 0;
    function sort() {
      var body = table.tBodies[0], numeric = th.dataset.type === "num";
      var dir = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
      var key = function (row) {
        var v = row.cells[col].dataset.value;
        return numeric ? (v === "" ? Infinity : parseFloat(v)) : (v || row.cells[col].textContent).toLowerCase();
      };
      Array.from(body.rows)
        .sort(function (a, b) { var x = key(a), y = key(b); return x < y ? -dir : x > y ? dir : 0; })
        .forEach(function (row) { body.appendChild(row); });
      table.querySelectorAll("th").forEach(function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", dir === 1 ? "ascending" : "descending");
    }
    th.addEventListener("click", sort);
    th.addEventListener("keydown", function (e) { if (e.key === "Enter") sort(); });
  });
});
// Printing shows every collapsed section.
window.addEventListener("beforeprint", function () {
  document.querySelectorAll("details").forEach(function (d) { d.open = true; });
});
