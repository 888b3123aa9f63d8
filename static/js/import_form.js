"use strict";
// The import form shows the fields of the chosen kind of batch only (each field's data-kinds names the kinds it
// applies to; none: every kind). Without JavaScript every field shows, and the server ignores those of other kinds.
(function () {
  const kind = document.getElementById("id_kind");
  if (!kind) return;
  function show() {
    for (const field of document.querySelectorAll("#import-form [data-kinds]")) {
      // A field with an error stays in sight, whatever the kind.
      field.hidden = !field.dataset.kinds.split(" ").includes(kind.value) && !field.querySelector(".errorlist");
    }
  }
  kind.addEventListener("change", show);
  show();
})();
