// The GPIO character device (Linux uAPI v2, <linux/gpio.h>) for door-agent: the few ioctls the chardev driver
// needs (chip and line info, line requests, values, edge events) and a uv_poll watcher for the request fd. Node
// has no ioctl(), and libgpiod's C API changed incompatibly between 1.x (Debian 12) and 2.x (Debian 13), so this
// is a small addon of our own that needs only the kernel headers. Built from source by `npm ci` (node-gyp,
// local Node headers); nothing is downloaded. The TypeScript side is src/hardware/chardev/binding.ts.
//
// Outputs are claimed with their initial level in the same GPIO_V2_GET_LINE_IOCTL (an OUTPUT_VALUES attribute),
// so a relay never glitches between "claimed" and "set". Edge events are returned raw (48-byte
// struct gpio_v2_line_event records) and parsed in TypeScript. Errors carry the errno name as `code` and a
// message that says what to do.
#include <node_api.h>

#ifdef __linux__

#include <errno.h>
#include <fcntl.h>
#include <linux/gpio.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <uv.h>

// Our masks are JS numbers used as 32-bit bitmaps, so at most 32 lines per request (the kernel allows 64).
#define MAX_LINES 32
// One readEvents call returns at most this many records: the kernel's largest event queue
// (GPIO_V2_LINES_MAX * 16), so one call empties any queue; anything beyond stays queued and the fd stays readable.
#define MAX_EVENTS_PER_READ (GPIO_V2_LINES_MAX * 16)
#define MSG_SIZE 2048

// ---- errors ----------------------------------------------------------------------------------------------------

static void errno_name(int err, char *buf, size_t size) {
  uv_err_name_r(-err, buf, size);  // on Linux, UV_E* == -E*
  if (buf[0] != 'E') snprintf(buf, size, "EUNKNOWN");
}

// Throws an Error whose code is the errno name and whose message is the formatted text.
__attribute__((format(printf, 3, 4))) static napi_value throw_sys(napi_env env, int err, const char *fmt, ...) {
  char msg[MSG_SIZE];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  char code[64];
  errno_name(err, code, sizeof code);
  napi_throw_error(env, code, msg);
  return NULL;
}

// A wrong argument from the caller (a bug in door-agent, not an operator's problem): TypeError, code EINVAL.
__attribute__((format(printf, 2, 3))) static napi_value throw_arg(napi_env env, const char *fmt, ...) {
  char msg[MSG_SIZE];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  napi_throw_type_error(env, "EINVAL", msg);
  return NULL;
}

// "No such file or directory (ENOENT)"
static const char *describe(int err, char *buf, size_t size) {
  char code[64];
  errno_name(err, code, sizeof code);
  snprintf(buf, size, "%s (%s)", strerror(err), code);
  return buf;
}

// ---- arguments -------------------------------------------------------------------------------------------------

static bool is_type(napi_env env, napi_value v, napi_valuetype want) {
  napi_valuetype t;
  return napi_typeof(env, v, &t) == napi_ok && t == want;
}

// An integer number in [0, max]; false for anything else (NaN, fractions, other types).
static bool get_uint(napi_env env, napi_value v, uint32_t max, uint32_t *out) {
  double d;
  if (!is_type(env, v, napi_number) || napi_get_value_double(env, v, &d) != napi_ok) return false;
  if (!(d >= 0 && d <= (double)max) || d != (double)(uint32_t)d) return false;
  *out = (uint32_t)d;
  return true;
}

static bool get_fd(napi_env env, napi_value v, int *fd) {
  uint32_t u;
  if (!get_uint(env, v, INT32_MAX, &u)) return false;
  *fd = (int)u;
  return true;
}

// A device path: a non-empty string without NUL bytes that fits PATH_MAX.
static bool get_path(napi_env env, napi_value v, char *buf, size_t size) {
  size_t len = 0;
  if (!is_type(env, v, napi_string) || napi_get_value_string_utf8(env, v, buf, size, &len) != napi_ok) return false;
  return len > 0 && len < size - 1 && strlen(buf) == len;
}

// Drops a UTF-8 sequence cut short at the end of buf (after truncation to a kernel name field).
static void trim_partial_utf8(char *buf, size_t *len) {
  size_t n = *len, start = n;
  while (start > 0 && ((unsigned char)buf[start - 1] & 0xC0) == 0x80) start--;  // continuation bytes
  if (start == 0) return;
  unsigned char lead = (unsigned char)buf[start - 1];
  size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
  if (n - (start - 1) < need) {
    *len = start - 1;
    buf[*len] = '\0';
  }
}

static napi_value make_string(napi_env env, const char *s, size_t max) {
  napi_value v;
  if (napi_create_string_utf8(env, s, strnlen(s, max), &v) != napi_ok) return NULL;
  return v;
}

static bool set_prop(napi_env env, napi_value obj, const char *name, napi_value v) {
  return v != NULL && napi_set_named_property(env, obj, name, v) == napi_ok;
}

static napi_value make_bool(napi_env env, bool b) {
  napi_value v;
  return napi_get_boolean(env, b, &v) == napi_ok ? v : NULL;
}

static napi_value make_uint(napi_env env, uint32_t u) {
  napi_value v;
  return napi_create_uint32(env, u, &v) == napi_ok ? v : NULL;
}

// ---- the chip --------------------------------------------------------------------------------------------------

// Opens a chip for ioctls; on failure throws (naming the path and what to do) and returns -1.
static int open_chip(napi_env env, const char *path) {
  int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd >= 0) return fd;
  int err = errno;
  char d[128];
  describe(err, d, sizeof d);
  switch (err) {
    case ENOENT:
      throw_sys(env, err, "cannot open the GPIO chip %s: %s; `ls /dev/gpiochip*` lists the chips of this board", path, d);
      break;
    case EACCES:
    case EPERM:
      throw_sys(env, err,
                "cannot open the GPIO chip %s: %s; the service user needs read-write access to the device "
                "(on Raspberry Pi OS: add it to the gpio group, e.g. `sudo usermod -aG gpio USER`, then restart the service)",
                path, d);
      break;
    default:
      throw_sys(env, err, "cannot open the GPIO chip %s: %s", path, d);
  }
  return -1;
}

// Throws for an ioctl on the chip fd that failed with ENOTTY/EINVAL-like errors, telling an operator why.
// `fd` is still open: on EINVAL it asks the chip how many lines it has to tell a bad offset from an old kernel.
static napi_value throw_chip_ioctl(napi_env env, int fd, const char *path, const char *op, int err, const uint32_t *offsets,
                                   uint32_t n) {
  char d[128];
  describe(err, d, sizeof d);
  if (err == ENOTTY) {
    return throw_sys(env, err, "%s is not a GPIO chip (%s: %s); GPIO chips are /dev/gpiochipN (`ls /dev/gpiochip*`)", path, op,
                     d);
  }
  if (err == EINVAL && n > 0) {
    struct gpiochip_info info;
    memset(&info, 0, sizeof info);
    if (ioctl(fd, GPIO_GET_CHIPINFO_IOCTL, &info) == 0) {
      for (uint32_t i = 0; i < n; i++) {
        if (offsets[i] >= info.lines && info.lines == 0) {
          return throw_sys(env, err, "%s (%.*s) has no lines (%s: %s)", path, GPIO_MAX_NAME_SIZE, info.label, op, d);
        }
        if (offsets[i] >= info.lines) {
          return throw_sys(env, err, "%s (%.*s) has no line %u: its lines are 0 to %u (%s: %s)", path, GPIO_MAX_NAME_SIZE,
                           info.label, offsets[i], info.lines - 1, op, d);
        }
      }
    }
    return throw_sys(env, err,
                     "%s refused %s: %s; the GPIO uAPI v2 needs Linux 5.10 or newer (`uname -r`), or the chip's driver "
                     "does not support the requested configuration",
                     path, op, d);
  }
  if (err == ENODEV) return throw_sys(env, err, "the GPIO chip %s is gone (%s: %s)", path, op, d);
  return throw_sys(env, err, "%s on %s failed: %s", op, path, d);
}

// chipInfo(path): { name, label, lines }
static napi_value ChipInfo(napi_env env, napi_callback_info cbinfo) {
  size_t argc = 1;
  napi_value args[1];
  char path[4096];
  if (napi_get_cb_info(env, cbinfo, &argc, args, NULL, NULL) != napi_ok || argc < 1 || !get_path(env, args[0], path, sizeof path)) {
    return throw_arg(env, "chipInfo(path): path must be a non-empty string (e.g. \"/dev/gpiochip0\")");
  }
  int fd = open_chip(env, path);
  if (fd < 0) return NULL;
  struct gpiochip_info info;
  memset(&info, 0, sizeof info);
  int rc = ioctl(fd, GPIO_GET_CHIPINFO_IOCTL, &info);
  int err = errno;
  if (rc < 0) {
    throw_chip_ioctl(env, fd, path, "GPIO_GET_CHIPINFO_IOCTL", err, NULL, 0);
    close(fd);
    return NULL;
  }
  close(fd);
  napi_value obj;
  if (napi_create_object(env, &obj) != napi_ok) return NULL;
  if (!set_prop(env, obj, "name", make_string(env, info.name, sizeof info.name)) ||
      !set_prop(env, obj, "label", make_string(env, info.label, sizeof info.label)) ||
      !set_prop(env, obj, "lines", make_uint(env, info.lines))) {
    return NULL;
  }
  return obj;
}

// lineInfo(path, offset): { offset, name, consumer, used, output }
static napi_value LineInfo(napi_env env, napi_callback_info cbinfo) {
  size_t argc = 2;
  napi_value args[2];
  char path[4096];
  uint32_t offset;
  if (napi_get_cb_info(env, cbinfo, &argc, args, NULL, NULL) != napi_ok || argc < 2 || !get_path(env, args[0], path, sizeof path)) {
    return throw_arg(env, "lineInfo(path, offset): path must be a non-empty string (e.g. \"/dev/gpiochip0\")");
  }
  if (!get_uint(env, args[1], UINT32_MAX, &offset)) {
    return throw_arg(env, "lineInfo(path, offset): offset must be an integer from 0 to 4294967295");
  }
  int fd = open_chip(env, path);
  if (fd < 0) return NULL;
  struct gpio_v2_line_info info;
  memset(&info, 0, sizeof info);
  info.offset = offset;
  int rc = ioctl(fd, GPIO_V2_GET_LINEINFO_IOCTL, &info);
  int err = errno;
  if (rc < 0) {
    throw_chip_ioctl(env, fd, path, "GPIO_V2_GET_LINEINFO_IOCTL", err, &offset, 1);
    close(fd);
    return NULL;
  }
  close(fd);
  napi_value obj;
  if (napi_create_object(env, &obj) != napi_ok) return NULL;
  if (!set_prop(env, obj, "offset", make_uint(env, info.offset)) ||
      !set_prop(env, obj, "name", make_string(env, info.name, sizeof info.name)) ||
      !set_prop(env, obj, "consumer", make_string(env, info.consumer, sizeof info.consumer)) ||
      !set_prop(env, obj, "used", make_bool(env, (info.flags & GPIO_V2_LINE_FLAG_USED) != 0)) ||
      !set_prop(env, obj, "output", make_bool(env, (info.flags & GPIO_V2_LINE_FLAG_OUTPUT) != 0))) {
    return NULL;
  }
  return obj;
}

// The optional property `name` of obj: *present is false when it is undefined (or missing).
static bool get_optional(napi_env env, napi_value obj, const char *name, napi_value *v, bool *present) {
  if (napi_get_named_property(env, obj, name, v) != napi_ok) return false;
  *present = !is_type(env, *v, napi_undefined);
  return true;
}

// Builds the EBUSY message: which of the requested lines are in use, and by whom.
static napi_value throw_busy(napi_env env, int fd, const char *path, const uint32_t *offsets, uint32_t n) {
  char held[MSG_SIZE / 2];
  size_t len = 0;
  held[0] = '\0';
  for (uint32_t i = 0; i < n && len < sizeof held - 1; i++) {
    struct gpio_v2_line_info info;
    memset(&info, 0, sizeof info);
    info.offset = offsets[i];
    if (ioctl(fd, GPIO_V2_GET_LINEINFO_IOCTL, &info) < 0 || !(info.flags & GPIO_V2_LINE_FLAG_USED)) continue;
    int w;
    if (info.consumer[0] != '\0') {
      w = snprintf(held + len, sizeof held - len, "%sline %u (consumer \"%.*s\")", len ? ", " : "", offsets[i],
                   GPIO_MAX_NAME_SIZE, info.consumer);
    } else {
      w = snprintf(held + len, sizeof held - len, "%sline %u (no consumer: a kernel function such as I2C, SPI, UART or an overlay)",
                   len ? ", " : "", offsets[i]);
    }
    if (w < 0) break;
    len += (size_t)w;
    if (len >= sizeof held) len = sizeof held - 1;
  }
  if (len == 0) snprintf(held, sizeof held, "one of the requested lines");
  return throw_sys(env, EBUSY,
                   "cannot claim lines of %s: the line is held by another program or a kernel driver: %s "
                   "(GPIO_V2_GET_LINE_IOCTL: %s (EBUSY)); `gpioinfo` shows who holds it: stop that program, "
                   "or wire the door to a free line",
                   path, held, strerror(EBUSY));
}

// requestLines(path, request): the line request's fd (non-blocking, close-on-exec).
static napi_value RequestLines(napi_env env, napi_callback_info cbinfo) {
  size_t argc = 2;
  napi_value args[2];
  char path[4096];
  if (napi_get_cb_info(env, cbinfo, &argc, args, NULL, NULL) != napi_ok || argc < 2 || !get_path(env, args[0], path, sizeof path)) {
    return throw_arg(env, "requestLines(path, request): path must be a non-empty string (e.g. \"/dev/gpiochip0\")");
  }
  napi_value req_obj = args[1];
  if (!is_type(env, req_obj, napi_object)) return throw_arg(env, "requestLines(path, request): request must be an object");

  struct gpio_v2_line_request req;
  memset(&req, 0, sizeof req);
  napi_value v;
  bool present;

  // consumer: truncated to what the kernel keeps (GPIO_MAX_NAME_SIZE - 1 bytes), never inside a UTF-8 sequence.
  if (napi_get_named_property(env, req_obj, "consumer", &v) != napi_ok) return NULL;
  size_t consumer_len = 0;
  if (!is_type(env, v, napi_string) ||
      napi_get_value_string_utf8(env, v, req.consumer, sizeof req.consumer, &consumer_len) != napi_ok || consumer_len == 0) {
    return throw_arg(env, "requestLines: request.consumer must be a non-empty string (shown by gpioinfo)");
  }
  trim_partial_utf8(req.consumer, &consumer_len);

  // offsets: 1 to 32 distinct integers.
  if (napi_get_named_property(env, req_obj, "offsets", &v) != napi_ok) return NULL;
  bool is_array = false;
  uint32_t n = 0;
  if (napi_is_array(env, v, &is_array) != napi_ok || !is_array || napi_get_array_length(env, v, &n) != napi_ok) {
    return throw_arg(env, "requestLines: request.offsets must be an array of line offsets");
  }
  if (n == 0 || n > MAX_LINES) {
    return throw_arg(env, "requestLines: request.offsets must hold 1 to %d line offsets (got %u)", MAX_LINES, n);
  }
  for (uint32_t i = 0; i < n; i++) {
    napi_value e;
    if (napi_get_element(env, v, i, &e) != napi_ok) return NULL;
    if (!get_uint(env, e, UINT32_MAX, &req.offsets[i])) {
      return throw_arg(env, "requestLines: request.offsets[%u] must be an integer from 0 to 4294967295", i);
    }
    for (uint32_t j = 0; j < i; j++) {
      if (req.offsets[j] == req.offsets[i]) {
        return throw_arg(env, "requestLines: request.offsets lists line %u twice (offsets[%u] and offsets[%u])", req.offsets[i], j, i);
      }
    }
  }
  req.num_lines = n;
  const uint64_t all = (UINT64_C(1) << n) - 1;  // n <= 32

  // direction
  if (napi_get_named_property(env, req_obj, "direction", &v) != napi_ok) return NULL;
  char dir[16];
  size_t dir_len = 0;
  if (!is_type(env, v, napi_string) || napi_get_value_string_utf8(env, v, dir, sizeof dir, &dir_len) != napi_ok ||
      strlen(dir) != dir_len || (strcmp(dir, "input") != 0 && strcmp(dir, "output") != 0)) {
    return throw_arg(env, "requestLines: request.direction must be 'input' or 'output'");
  }
  const bool output = strcmp(dir, "output") == 0;
  uint64_t flags = output ? GPIO_V2_LINE_FLAG_OUTPUT : GPIO_V2_LINE_FLAG_INPUT;

  // bias (default 'as-is': no bias flag, the kernel leaves the pull as it is)
  if (!get_optional(env, req_obj, "bias", &v, &present)) return NULL;
  if (present) {
    char bias[16];
    size_t bias_len = 0;
    if (!is_type(env, v, napi_string) || napi_get_value_string_utf8(env, v, bias, sizeof bias, &bias_len) != napi_ok ||
        strlen(bias) != bias_len) {
      return throw_arg(env, "requestLines: request.bias must be 'pull-up', 'pull-down', 'disabled' or 'as-is'");
    }
    if (strcmp(bias, "pull-up") == 0) {
      flags |= GPIO_V2_LINE_FLAG_BIAS_PULL_UP;
    } else if (strcmp(bias, "pull-down") == 0) {
      flags |= GPIO_V2_LINE_FLAG_BIAS_PULL_DOWN;
    } else if (strcmp(bias, "disabled") == 0) {
      flags |= GPIO_V2_LINE_FLAG_BIAS_DISABLED;
    } else if (strcmp(bias, "as-is") != 0) {
      return throw_arg(env, "requestLines: request.bias must be 'pull-up', 'pull-down', 'disabled' or 'as-is' (got '%s')", bias);
    }
  }

  uint32_t num_attrs = 0;

  // values: outputs only, one 0/1 per offset, applied in this same ioctl (no glitch between claim and set).
  if (!get_optional(env, req_obj, "values", &v, &present)) return NULL;
  if (output) {
    uint32_t nv = 0;
    if (!present || napi_is_array(env, v, &is_array) != napi_ok || !is_array || napi_get_array_length(env, v, &nv) != napi_ok) {
      return throw_arg(env, "requestLines: request.values must be an array of 0/1, one per offset, for outputs (the level each line starts at)");
    }
    if (nv != n) {
      return throw_arg(env, "requestLines: request.values has %u entries but request.offsets has %u: give one level per offset", nv, n);
    }
    uint64_t bits = 0;
    for (uint32_t i = 0; i < n; i++) {
      napi_value e;
      uint32_t bit;
      if (napi_get_element(env, v, i, &e) != napi_ok) return NULL;
      if (!get_uint(env, e, 1, &bit)) return throw_arg(env, "requestLines: request.values[%u] must be 0 or 1", i);
      if (bit) bits |= UINT64_C(1) << i;
    }
    struct gpio_v2_line_config_attribute *a = &req.config.attrs[num_attrs++];
    a->attr.id = GPIO_V2_LINE_ATTR_ID_OUTPUT_VALUES;
    a->attr.values = bits;
    a->mask = all;
  } else if (present) {
    return throw_arg(env, "requestLines: request.values is only for direction 'output'");
  }

  // edges: inputs only.
  if (!get_optional(env, req_obj, "edges", &v, &present)) return NULL;
  if (present) {
    bool edges = false;
    if (!is_type(env, v, napi_boolean) || napi_get_value_bool(env, v, &edges) != napi_ok) {
      return throw_arg(env, "requestLines: request.edges must be a boolean");
    }
    if (edges && output) return throw_arg(env, "requestLines: request.edges is only for direction 'input'");
    if (edges) flags |= GPIO_V2_LINE_FLAG_EDGE_RISING | GPIO_V2_LINE_FLAG_EDGE_FALLING;
  }

  // debounceUs: inputs only; 0 for none.
  if (!get_optional(env, req_obj, "debounceUs", &v, &present)) return NULL;
  if (present) {
    uint32_t us;
    if (!get_uint(env, v, UINT32_MAX, &us)) {
      return throw_arg(env, "requestLines: request.debounceUs must be an integer number of microseconds (0 for none)");
    }
    if (us > 0 && output) return throw_arg(env, "requestLines: request.debounceUs is only for direction 'input'");
    if (us > 0) {
      struct gpio_v2_line_config_attribute *a = &req.config.attrs[num_attrs++];
      a->attr.id = GPIO_V2_LINE_ATTR_ID_DEBOUNCE;
      a->attr.debounce_period_us = us;
      a->mask = all;
    }
  }

  // eventBufferSize: 0 for the kernel's default (16 per line); the kernel caps it at 1024.
  if (!get_optional(env, req_obj, "eventBufferSize", &v, &present)) return NULL;
  if (present && !get_uint(env, v, UINT32_MAX, &req.event_buffer_size)) {
    return throw_arg(env, "requestLines: request.eventBufferSize must be a non-negative integer (0: the kernel's default)");
  }

  req.config.flags = flags;
  req.config.num_attrs = num_attrs;

  int chip = open_chip(env, path);
  if (chip < 0) return NULL;
  int rc = ioctl(chip, GPIO_V2_GET_LINE_IOCTL, &req);
  int err = errno;
  if (rc < 0) {
    char d[128];
    describe(err, d, sizeof d);
    if (err == EBUSY) {
      throw_busy(env, chip, path, req.offsets, n);
    } else if (err == ENXIO) {
      throw_sys(env, err, "%s cannot report edges on the requested lines (no interrupt for them; GPIO_V2_GET_LINE_IOCTL: %s)", path, d);
    } else {
      throw_chip_ioctl(env, chip, path, "GPIO_V2_GET_LINE_IOCTL", err, req.offsets, n);
    }
    close(chip);
    return NULL;
  }
  close(chip);  // the request fd holds the lines on its own

  int fd = req.fd;
  int fl = fcntl(fd, F_GETFL);
  int fdfl = fl < 0 ? -1 : fcntl(fd, F_GETFD);
  if (fl < 0 || fdfl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 || fcntl(fd, F_SETFD, fdfl | FD_CLOEXEC) < 0) {
    err = errno;
    close(fd);
    char d[128];
    return throw_sys(env, err, "cannot make the line request on %s non-blocking (fcntl: %s)", path, describe(err, d, sizeof d));
  }
  napi_value result;
  if (napi_create_int32(env, fd, &result) != napi_ok) {
    close(fd);
    return NULL;
  }
  return result;
}

// ---- the line request fd -----------------------------------------------------------------------------------------

// Throws for a failed ioctl on a line request fd.
static napi_value throw_line_ioctl(napi_env env, int fd, const char *op, int err) {
  char d[128];
  describe(err, d, sizeof d);
  switch (err) {
    case EBADF:
      return throw_sys(env, err, "fd %d is not open (%s: %s)", fd, op, d);
    case ENOTTY:
      return throw_sys(env, err, "fd %d is not a GPIO line request (%s: %s)", fd, op, d);
    case EPERM:
      return throw_sys(env, err, "fd %d: cannot set the level of a line requested as an input (%s: %s)", fd, op, d);
    case EINVAL:
      return throw_sys(env, err, "fd %d: the mask selects none of the requested lines, or the fd is not a GPIO line request (%s: %s)",
                       fd, op, d);
    case ENODEV:
      return throw_sys(env, err, "fd %d: the GPIO chip is gone (%s: %s)", fd, op, d);
    default:
      return throw_sys(env, err, "%s on fd %d failed: %s", op, fd, d);
  }
}

// getValues(fd, mask): bit i is the level of offsets[i], for the bits of mask.
static napi_value GetValues(napi_env env, napi_callback_info cbinfo) {
  size_t argc = 2;
  napi_value args[2];
  int fd;
  uint32_t mask;
  if (napi_get_cb_info(env, cbinfo, &argc, args, NULL, NULL) != napi_ok || argc < 2 || !get_fd(env, args[0], &fd)) {
    return throw_arg(env, "getValues(fd, mask): fd must be a non-negative integer");
  }
  if (!get_uint(env, args[1], UINT32_MAX, &mask)) {
    return throw_arg(env, "getValues(fd, mask): mask must be an integer from 0 to 0xffffffff");
  }
  struct gpio_v2_line_values lv;
  memset(&lv, 0, sizeof lv);
  lv.mask = mask;
  if (ioctl(fd, GPIO_V2_LINE_GET_VALUES_IOCTL, &lv) < 0) return throw_line_ioctl(env, fd, "GPIO_V2_LINE_GET_VALUES_IOCTL", errno);
  return make_uint(env, (uint32_t)(lv.bits & mask));
}

// setValues(fd, mask, bits): offsets[i] := bit i of bits, for the bits of mask.
static napi_value SetValues(napi_env env, napi_callback_info cbinfo) {
  size_t argc = 3;
  napi_value args[3];
  int fd;
  uint32_t mask, bits;
  if (napi_get_cb_info(env, cbinfo, &argc, args, NULL, NULL) != napi_ok || argc < 3 || !get_fd(env, args[0], &fd)) {
    return throw_arg(env, "setValues(fd, mask, bits): fd must be a non-negative integer");
  }
  if (!get_uint(env, args[1], UINT32_MAX, &mask)) {
    return throw_arg(env, "setValues(fd, mask, bits): mask must be an integer from 0 to 0xffffffff");
  }
  if (!get_uint(env, args[2], UINT32_MAX, &bits)) {
    return throw_arg(env, "setValues(fd, mask, bits): bits must be an integer from 0 to 0xffffffff");
  }
  struct gpio_v2_line_values lv;
  memset(&lv, 0, sizeof lv);
  lv.mask = mask;
  lv.bits = bits & mask;
  if (ioctl(fd, GPIO_V2_LINE_SET_VALUES_IOCTL, &lv) < 0) return throw_line_ioctl(env, fd, "GPIO_V2_LINE_SET_VALUES_IOCTL", errno);
  return NULL;
}

// readEvents(fd): every queued byte (struct gpio_v2_line_event records) as a Buffer, or null when none.
// Never blocks: the fd is switched to non-blocking if it is not already (request fds are).
static napi_value ReadEvents(napi_env env, napi_callback_info cbinfo) {
  size_t argc = 1;
  napi_value args[1];
  int fd;
  if (napi_get_cb_info(env, cbinfo, &argc, args, NULL, NULL) != napi_ok || argc < 1 || !get_fd(env, args[0], &fd)) {
    return throw_arg(env, "readEvents(fd): fd must be a non-negative integer");
  }
  char d[128];
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0 || (!(fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)) {
    int err = errno;
    return throw_sys(env, err, "readEvents: fd %d: %s", fd, describe(err, d, sizeof d));
  }
  const size_t record = sizeof(struct gpio_v2_line_event);
  const size_t cap = MAX_EVENTS_PER_READ * record;
  char *buf = malloc(cap);
  if (buf == NULL) return throw_sys(env, ENOMEM, "readEvents: out of memory");
  size_t len = 0;
  int err = 0;
  while (cap - len >= record) {  // the kernel refuses reads shorter than one record (EINVAL)
    ssize_t got = read(fd, buf + len, cap - len);
    if (got > 0) {
      len += (size_t)got;
    } else if (got == 0) {
      break;  // end of file (a pipe without writers; never a line request)
    } else if (errno == EINTR) {
      continue;
    } else {
      if (errno != EAGAIN && errno != EWOULDBLOCK) err = errno;
      break;
    }
  }
  // An error after some records: return those; the error comes back on the next call.
  if (err != 0 && len == 0) {
    free(buf);
    if (err == ENODEV) return throw_sys(env, err, "readEvents: fd %d: the GPIO chip is gone (%s)", fd, describe(err, d, sizeof d));
    return throw_sys(env, err, "readEvents: read() on fd %d failed: %s", fd, describe(err, d, sizeof d));
  }
  napi_value result;
  napi_status status;
  if (len == 0) {
    status = napi_get_null(env, &result);
  } else {
    void *data;
    status = napi_create_buffer_copy(env, len, buf, &data, &result);
  }
  free(buf);
  return status == napi_ok ? result : NULL;
}

// close(fd): releases the lines of a request (their state is then up to the kernel and the pin driver).
static napi_value Close(napi_env env, napi_callback_info cbinfo) {
  size_t argc = 1;
  napi_value args[1];
  int fd;
  if (napi_get_cb_info(env, cbinfo, &argc, args, NULL, NULL) != napi_ok || argc < 1 || !get_fd(env, args[0], &fd)) {
    return throw_arg(env, "close(fd): fd must be a non-negative integer");
  }
  // On Linux the fd is released even when close() reports EINTR: never retry (the number may be reused).
  if (close(fd) < 0 && errno != EINTR) {
    int err = errno;
    char d[128];
    if (err == EBADF) return throw_sys(env, err, "close(fd): fd %d is not open (closed twice?)", fd);
    return throw_sys(env, err, "close(fd): fd %d: %s", fd, describe(err, d, sizeof d));
  }
  return NULL;
}

// ---- watch -----------------------------------------------------------------------------------------------------
//
// Ownership: a Watcher is owned by two parties, the uv handle (until its close callback) and the JS `close`
// function returned to the caller (until its finalizer). It is freed when both are done. While watching, the
// callbacks and the close function are held by strong references, so dropping the returned object does not stop
// or free an active watcher; close() releases them.

typedef struct {
  uv_poll_t poll;
  napi_env env;
  int fd;
  napi_ref self;  // the close function, strong while watching
  napi_ref on_readable;
  napi_ref on_error;
  napi_async_context async;
  bool closing;         // uv_close called
  bool handle_closed;   // uv's close callback ran
  bool finalized;       // the JS close function was collected (or the environment is going away)
  bool in_callback;     // inside napi_make_callback (async is destroyed after it returns)
} Watcher;

static void on_handle_closed(uv_handle_t *handle) {
  Watcher *w = (Watcher *)handle->data;
  w->handle_closed = true;
  if (w->finalized) free(w);
}

static void delete_ref(napi_env env, napi_ref *ref) {
  if (*ref != NULL) {
    napi_delete_reference(env, *ref);
    *ref = NULL;
  }
}

static void destroy_async(Watcher *w) {
  if (w->async != NULL) {
    napi_async_destroy(w->env, w->async);
    w->async = NULL;
  }
}

// Stops polling and releases the JS side. Idempotent.
static void stop_watcher(Watcher *w) {
  if (w->closing) return;
  w->closing = true;
  uv_poll_stop(&w->poll);
  uv_close((uv_handle_t *)&w->poll, on_handle_closed);
  delete_ref(w->env, &w->on_readable);
  delete_ref(w->env, &w->on_error);
  delete_ref(w->env, &w->self);
  if (!w->in_callback) destroy_async(w);
}

// Calls fn (from a napi_ref) from the event loop. A throw becomes an uncaught exception, as for any callback
// Node calls (process 'uncaughtException', else the process prints it and exits).
static void call_js(Watcher *w, napi_ref fn_ref, size_t argc, napi_value *argv) {
  napi_env env = w->env;
  napi_value fn, recv, result;
  if (fn_ref == NULL || napi_get_reference_value(env, fn_ref, &fn) != napi_ok || fn == NULL) return;
  if (napi_get_global(env, &recv) != napi_ok) return;  // napi_make_callback needs an object as `this`
  w->in_callback = true;
  napi_status status = napi_make_callback(env, w->async, recv, fn, argc, argv, &result);
  w->in_callback = false;
  if (status == napi_pending_exception) {
    napi_value exc;
    if (napi_get_and_clear_last_exception(env, &exc) == napi_ok) napi_fatal_exception(env, exc);
  }
  if (w->closing) destroy_async(w);  // close() was called by the callback
}

static void on_poll(uv_poll_t *handle, int status, int events) {
  (void)events;
  Watcher *w = (Watcher *)handle->data;
  if (w->closing) return;
  napi_env env = w->env;
  napi_handle_scope scope;
  if (napi_open_handle_scope(env, &scope) != napi_ok) return;
  if (status < 0) {
    // libuv has already stopped the handle. It reports EPOLLERR/EPOLLHUP as UV_EBADF; on a line request that
    // means the chip went away.
    char msg[512];
    snprintf(msg, sizeof msg, "polling fd %d failed: %s (%s)%s", w->fd, uv_strerror(status), uv_err_name(status),
             status == UV_EBADF ? "; the fd reports an error or hang-up (a GPIO chip that was removed, or an fd closed while watched)"
                                : "");
    napi_value arg;
    if (napi_create_string_utf8(env, msg, NAPI_AUTO_LENGTH, &arg) == napi_ok) call_js(w, w->on_error, 1, &arg);
    stop_watcher(w);  // no callback after an error; close() is then a no-op
  } else {
    call_js(w, w->on_readable, 0, NULL);
  }
  napi_close_handle_scope(env, scope);
}

// The close function was collected, or the environment is going away (worker exit, process teardown).
static void finalize_watcher(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  Watcher *w = (Watcher *)data;
  w->finalized = true;
  if (!w->closing) {
    // Only at environment teardown (a watching watcher is strongly referenced): stop the handle, leave the
    // references to the environment's own cleanup.
    w->closing = true;
    uv_poll_stop(&w->poll);
    uv_close((uv_handle_t *)&w->poll, on_handle_closed);
    return;
  }
  if (w->handle_closed) free(w);
}

static napi_value WatcherClose(napi_env env, napi_callback_info cbinfo) {
  Watcher *w = NULL;
  size_t argc = 0;
  if (napi_get_cb_info(env, cbinfo, &argc, NULL, NULL, (void **)&w) != napi_ok || w == NULL) return NULL;
  stop_watcher(w);
  return NULL;
}

// watch(fd, onReadable, onError): { close() }
static napi_value Watch(napi_env env, napi_callback_info cbinfo) {
  size_t argc = 3;
  napi_value args[3];
  int fd;
  if (napi_get_cb_info(env, cbinfo, &argc, args, NULL, NULL) != napi_ok || argc < 3 || !get_fd(env, args[0], &fd)) {
    return throw_arg(env, "watch(fd, onReadable, onError): fd must be a non-negative integer");
  }
  if (!is_type(env, args[1], napi_function)) return throw_arg(env, "watch(fd, onReadable, onError): onReadable must be a function");
  if (!is_type(env, args[2], napi_function)) return throw_arg(env, "watch(fd, onReadable, onError): onError must be a function");

  uv_loop_t *loop;
  if (napi_get_uv_event_loop(env, &loop) != napi_ok) return NULL;
  Watcher *w = calloc(1, sizeof *w);
  if (w == NULL) return throw_sys(env, ENOMEM, "watch: out of memory");
  w->env = env;
  w->fd = fd;
  int rc = uv_poll_init(loop, &w->poll, fd);  // also makes the fd non-blocking
  if (rc < 0) {
    free(w);  // uv_poll_init failed: the handle is not registered with the loop
    char msg[256];
    snprintf(msg, sizeof msg, "watch: cannot poll fd %d: %s (%s)%s", fd, uv_strerror(rc), uv_err_name(rc),
             rc == UV_EEXIST ? "; it is already watched" : rc == UV_EPERM ? "; regular files cannot be polled" : "");
    napi_throw_error(env, uv_err_name(rc), msg);
    return NULL;
  }
  w->poll.data = w;

  napi_value close_fn, obj, name;
  if (napi_create_function(env, "close", NAPI_AUTO_LENGTH, WatcherClose, w, &close_fn) != napi_ok ||
      napi_add_finalizer(env, close_fn, w, finalize_watcher, NULL, NULL) != napi_ok) {
    // Nothing JS-side owns w: release it through the handle alone.
    w->finalized = true;
    w->closing = true;
    uv_close((uv_handle_t *)&w->poll, on_handle_closed);
    return NULL;
  }
  // From here the close function's finalizer co-owns w: on failure, stop_watcher() and let GC do the rest.
  if (napi_create_reference(env, close_fn, 1, &w->self) != napi_ok ||
      napi_create_reference(env, args[1], 1, &w->on_readable) != napi_ok ||
      napi_create_reference(env, args[2], 1, &w->on_error) != napi_ok ||
      napi_create_string_utf8(env, "GpioChardevWatch", NAPI_AUTO_LENGTH, &name) != napi_ok ||
      napi_async_init(env, NULL, name, &w->async) != napi_ok || napi_create_object(env, &obj) != napi_ok ||
      napi_set_named_property(env, obj, "close", close_fn) != napi_ok) {
    stop_watcher(w);
    return NULL;
  }
  rc = uv_poll_start(&w->poll, UV_READABLE, on_poll);
  if (rc < 0) {
    stop_watcher(w);
    char msg[256];
    snprintf(msg, sizeof msg, "watch: cannot poll fd %d: %s (%s)", fd, uv_strerror(rc), uv_err_name(rc));
    napi_throw_error(env, uv_err_name(rc), msg);
    return NULL;
  }
  return obj;
}

#else  // not Linux: same exports, each throwing.

#define NOT_LINUX(Name)                                                                 \
  static napi_value Name(napi_env env, napi_callback_info info) {                       \
    (void)info;                                                                         \
    napi_throw_error(env, "ENOSYS", "the GPIO character device exists only on Linux"); \
    return NULL;                                                                        \
  }
NOT_LINUX(ChipInfo)
NOT_LINUX(LineInfo)
NOT_LINUX(RequestLines)
NOT_LINUX(GetValues)
NOT_LINUX(SetValues)
NOT_LINUX(ReadEvents)
NOT_LINUX(Watch)
NOT_LINUX(Close)

#endif  // __linux__

#define EXPORTS(X)                                                                                   \
  X(chipInfo, ChipInfo) X(lineInfo, LineInfo) X(requestLines, RequestLines) X(getValues, GetValues) \
  X(setValues, SetValues) X(readEvents, ReadEvents) X(watch, Watch) X(close, Close)

NAPI_MODULE_INIT() {
  napi_value fn;
#define EXPORT(js, c)                                                                              \
  if (napi_create_function(env, #js, NAPI_AUTO_LENGTH, c, NULL, &fn) != napi_ok) return NULL; \
  if (napi_set_named_property(env, exports, #js, fn) != napi_ok) return NULL;
  EXPORTS(EXPORT)
#undef EXPORT
  return exports;
}
