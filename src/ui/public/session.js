// The bearer token lives in sessionStorage only: gone when the tab closes, never in a URL, a cookie
// or a log line. It leaves the browser only in the Authorization header of API calls (api.js).
const KEY = 'dnsplane.token';

export function getToken() {
  return sessionStorage.getItem(KEY) ?? '';
}

export function setToken(token) {
  sessionStorage.setItem(KEY, token);
}

export function clearToken() {
  sessionStorage.removeItem(KEY);
}
