// Sortable tables: a click on a column's header sorts its rows (again: the other way round).
// Cells sort by their data-sort value where they have one (numbers), else by their text.
document.addEventListener("DOMContentLoaded", () => {
  for (const table of document.querySelectorAll("table.sortable")) {
    table.querySelectorAll("thead th").forEach((header, column) => {
      header.addEventListener("click", () => {
        const body = table.tBodies[0];
        const numeric = header.dataset.type === "number";
        const ascending = header.dataset.order !== "asc";
        table.querySelectorAll("thead th").forEach((h) => { delete h.dataset.order; });
        header.dataset.order = ascending ? "asc" : "desc";
        const key = (row) => {
          const cell = row.cells[column];
          const raw = cell.dataset.sort !== undefined ? cell.dataset.sort : cell.textContent.trim();
          if (!numeric) return raw;
          return raw === "" ? Number.POSITIVE_INFINITY : Number(raw);
        };
        const rows = Array.from(body.rows);
        rows.sort((a, b) => {
          const x = key(a), y = key(b);
          const order = numeric ? x - y : String(x).localeCompare(String(y));
          return ascending ? order : -order;
        });
        rows.forEach((row) => body.appendChild(row));
      });
    });
  }
});
