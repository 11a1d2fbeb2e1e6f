// Copy buttons: a button with data-copy="<input id>" copies that input's
// value. Without JavaScript the button stays hidden and the field can be
// selected and copied by hand.
document.querySelectorAll("button[data-copy]").forEach(function (b) {
  b.hidden = false;
  b.addEventListener("click", function () {
    var el = document.getElementById(b.dataset.copy);
    el.select();
    var done = function () { b.textContent = "Copied"; };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(el.value).then(done, function () { document.execCommand("copy"); done(); });
    } else {
      document.execCommand("copy");
      done();
    }
  });
});
