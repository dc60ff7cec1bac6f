// Asks before something that cannot be undone, in the page's own dialog (index.html #confirm-dialog).
const dialog = document.getElementById('confirm-dialog');

/** Resolves true when the user confirms `message`. */
export function confirmDelete(message) {
  dialog.querySelector('#confirm-text').textContent = message;
  dialog.returnValue = '';
  dialog.showModal();
  return new Promise((resolve) => dialog.addEventListener('close', () => resolve(dialog.returnValue === 'ok'), { once: true }));
}
