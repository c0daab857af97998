// The review queue's keys (/review/queue): a agrees, d disagrees, s skips, by clicking the form's buttons.
// Keys typed into a text field, or with a modifier, are left alone. The forms work without this script.
"use strict";
(function () {
  var buttons = { a: "queue-agree", d: "queue-disagree", s: "queue-skip" };
  document.addEventListener("keydown", function (event) {
    if (event.defaultPrevented || event.repeat || event.isComposing) return;
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    var target = event.target;
    if (target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))) return;
    var id = buttons[event.key];
    var button = id ? document.getElementById(id) : null;
    if (!button) return;
    event.preventDefault();
    button.click();
  });
})();
