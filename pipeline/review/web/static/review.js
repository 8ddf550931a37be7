// skillmill review: keyboard shortcuts and the reviewer's name. The page works without it.
(function () {
  "use strict";
  const page = document.body.dataset.page;
  const $ = (selector) => document.querySelector(selector);
  const go = (el) => { if (el && el.href) window.location.href = el.href; };
  const typing = (el) => el && (el.tagName === "INPUT" || el.tagName === "TEXTAREA" || el.tagName === "SELECT");

  // Who decides: kept in this browser, sent with every form.
  const who = $("#who");
  const stored = window.localStorage.getItem("skillmill.reviewer");
  if (who && stored) who.value = stored;
  const syncWho = () => {
    document.querySelectorAll("input.who-field").forEach((field) => { field.value = who ? who.value.trim() : field.value; });
  };
  if (who) {
    who.addEventListener("change", () => { window.localStorage.setItem("skillmill.reviewer", who.value.trim()); syncWho(); });
  }
  syncWho();
  document.querySelectorAll("form").forEach((form) => form.addEventListener("submit", (event) => {
    syncWho();
    const question = form.dataset.confirm;
    if (question && !window.confirm(question)) event.preventDefault();
  }));

  const help = $("#help");
  const toggleHelp = () => { if (help) help.hidden = !help.hidden; };
  const showHelp = $("#show-help");
  if (showHelp) showHelp.addEventListener("click", toggleHelp);

  // The queue: j/k move a selection, Enter opens it; clicking anywhere on a row opens it.
  const rows = Array.from(document.querySelectorAll("tr.row"));
  let selected = -1;
  const select = (i) => {
    if (!rows.length) return;
    selected = Math.max(0, Math.min(rows.length - 1, i));
    rows.forEach((row, n) => row.classList.toggle("selected", n === selected));
    rows[selected].scrollIntoView({ block: "nearest" });
  };
  rows.forEach((row, n) => row.addEventListener("click", (event) => {
    if (event.target.tagName !== "A") { selected = n; window.location.href = row.dataset.href; }
  }));

  const approve = () => {
    const confirmBox = $("#confirm-flags");
    if (confirmBox && !confirmBox.checked) {
      confirmBox.focus();
      confirmBox.parentElement.scrollIntoView({ block: "center" });
      return;
    }
    const form = $("#approve-form");
    if (form) { syncWho(); form.submit(); }
  };

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey && event.key === "Enter" && page === "edit") {
      event.preventDefault(); syncWho(); $("#edit-form").submit(); return;
    }
    if (event.key === "Escape") {
      if (help && !help.hidden) { help.hidden = true; return; }
      if (typing(document.activeElement)) { document.activeElement.blur(); return; }
      if (page === "edit") go($("#back"));
      return;
    }
    if (typing(event.target) || event.ctrlKey || event.metaKey || event.altKey) return;
    const key = event.key;
    if (key === "?") { toggleHelp(); return; }
    if (page === "queue") {
      if (key === "j" || key === "ArrowDown") { event.preventDefault(); select(selected + 1); }
      else if (key === "k" || key === "ArrowUp") { event.preventDefault(); select(selected - 1); }
      else if ((key === "Enter" || key === "o") && selected >= 0) { window.location.href = rows[selected].dataset.href; }
      else if (key === "/") { event.preventDefault(); const first = $("#f-repo"); if (first) first.focus(); }
      return;
    }
    if (page === "skill") {
      if (key === "j" || key === "n" || key === "ArrowRight") go($("#next"));
      else if (key === "k" || key === "p" || key === "ArrowLeft") go($("#prev"));
      else if (key === "u") go($("#back"));
      else if (key === "a") approve();
      else if (key === "r") { const reason = $("#reason"); if (reason) { event.preventDefault(); reason.focus(); } }
      else if (key === "e") go($("#edit"));
      else if (key === "x") {
        const all = Array.from(document.querySelectorAll("details.evidence"));
        const open = all.some((d) => d.open);
        all.forEach((d) => { d.open = !open; });
      }
    }
  });
  document.body.dataset.ready = "1";  // shortcuts are live (tests wait for this)
})();
