// The invitation token is the link's fragment (never sent to the server,
// so never in an access log): copy it into the form, hide the code field
// it fills, and drop it from the address bar and the history.
(function () {
  var token = decodeURIComponent(location.hash.slice(1));
  var field = document.getElementById("token");
  if (!token || !field) return;
  field.value = token;
  document.getElementById("invite-code").hidden = true;
  history.replaceState(null, "", location.pathname + location.search);
})();
