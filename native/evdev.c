// evdev for door-agent: takes a keyboard-style card reader (/dev/input/event*) exclusively (EVIOCGRAB), so the
// numbers it types reach door-agent only, never a console or a login prompt on the same machine. Reading the
// device needs no addon of its own: the GPIO addon's watch/readEvents poll any non-blocking fd. Built from
// source by `npm ci` (node-gyp, local Node headers); nothing is downloaded.
#include <errno.h>
#include <node_api.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#ifdef __linux__
#include <linux/input.h>
#include <sys/ioctl.h>
#endif

static const char *errno_code(int err) {
  switch (err) {
    case EBADF: return "EBADF";
    case EBUSY: return "EBUSY";
    case EINVAL: return "EINVAL";
    case ENOTTY: return "ENOTTY";
    case ENODEV: return "ENODEV";
    case EACCES: return "EACCES";
    case EPERM: return "EPERM";
    default: return "EIO";
  }
}

// grab(fd: number, exclusive: boolean): void. EBUSY: another program holds the device; ENOTTY: not an input device.
static napi_value Grab(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value args[2];
  int32_t fd = -1;
  bool exclusive = false;
  if (napi_get_cb_info(env, info, &argc, args, NULL, NULL) != napi_ok || argc != 2 ||
      napi_get_value_int32(env, args[0], &fd) != napi_ok || napi_get_value_bool(env, args[1], &exclusive) != napi_ok || fd < 0) {
    napi_throw_type_error(env, "EINVAL", "grab(fd, exclusive) takes a file descriptor and a boolean");
    return NULL;
  }
#ifdef __linux__
  if (ioctl(fd, EVIOCGRAB, exclusive ? 1 : 0) != 0) {
    int err = errno;
    char message[160];
    snprintf(message, sizeof message, "EVIOCGRAB on fd %d: %s", fd, strerror(err));
    napi_throw_error(env, errno_code(err), message);
  }
#else
  napi_throw_error(env, "ENOSYS", "input devices (evdev) exist only on Linux");
#endif
  return NULL;
}

NAPI_MODULE_INIT() {
  napi_value fn;
  if (napi_create_function(env, "grab", NAPI_AUTO_LENGTH, Grab, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "grab", fn) != napi_ok) return NULL;
  return exports;
}
