// sd_notify for door-agent: sends one datagram to systemd's NOTIFY_SOCKET. Node has no Unix datagram sockets,
// and the notification must come from the main process, from the event loop (a watchdog ping from a helper
// process or thread would go on while the loop is stuck). Built from source by `npm ci` (node-gyp, local Node
// headers); nothing is downloaded.
#include <errno.h>
#include <node_api.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static napi_value throw_error(napi_env env, const char *code, const char *message) {
  napi_throw_error(env, code, message);
  return NULL;
}

// notify(socketPath: string, state: string): void. An abstract socket is given with a leading '@', as systemd
// does. Never blocks: a full receive queue is an error (EAGAIN) for the caller to report, not a stall.
static napi_value Notify(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value args[2];
  if (napi_get_cb_info(env, info, &argc, args, NULL, NULL) != napi_ok || argc != 2) {
    return throw_error(env, "EINVAL", "notify(socketPath, state) takes two strings");
  }
  struct sockaddr_un addr;
  memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  char path[sizeof addr.sun_path + 1];
  size_t path_len = 0;
  if (napi_get_value_string_utf8(env, args[0], path, sizeof path, &path_len) != napi_ok || path_len == 0 ||
      path_len >= sizeof addr.sun_path) {
    return throw_error(env, "EINVAL", "the socket path must be a string of 1 to 107 bytes");
  }
  char state[4096];
  size_t state_len = 0;
  if (napi_get_value_string_utf8(env, args[1], state, sizeof state, &state_len) != napi_ok || state_len == 0 ||
      state_len >= sizeof state - 1) {
    return throw_error(env, "EINVAL", "the state must be a string of 1 to 4094 bytes");
  }
  socklen_t addr_len;
  if (path[0] == '@') {
    memcpy(addr.sun_path + 1, path + 1, path_len - 1);  // sun_path[0] stays '\0': the abstract namespace
    addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + path_len);
  } else {
    memcpy(addr.sun_path, path, path_len);
    addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + path_len + 1);
  }
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return throw_error(env, "ESOCKET", strerror(errno));
  ssize_t sent = sendto(fd, state, state_len, MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&addr, addr_len);
  int err = errno;
  close(fd);
  if (sent < 0) return throw_error(env, "ESENDTO", strerror(err));
  return NULL;
}

NAPI_MODULE_INIT() {
  napi_value fn;
  if (napi_create_function(env, "notify", NAPI_AUTO_LENGTH, Notify, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "notify", fn) != napi_ok) return NULL;
  return exports;
}
