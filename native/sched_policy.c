// sched_policy for door-agent: puts one thread of this process under SCHED_BATCH. The daemon's helper threads (V8's
// compiler and garbage-collector helpers, libuv's pool, the sync and checkpoint workers) then never preempt the
// event loop's thread when they wake, as they did in the middle of a tap; they keep their nice value and their fair
// share of the CPU. Node has no call for a thread's scheduling policy. Built from source by `npm ci` (node-gyp,
// local Node headers); nothing is downloaded.
#define _GNU_SOURCE
#include <errno.h>
#include <node_api.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

static napi_value throw_error(napi_env env, const char *code, const char *message) {
  napi_throw_error(env, code, message);
  return NULL;
}

static const char *errno_code(int err) {
  switch (err) {
    case ESRCH: return "ESRCH";  // the thread has ended
    case EPERM: return "EPERM";
    case EINVAL: return "EINVAL";
    default: return "ESCHED";
  }
}

// batch(tid: number): void. A thread id of this process (from /proc/self/task), or 0 for the calling thread.
static napi_value Batch(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value args[1];
  double value = -1;
  // A double, not an int64: napi_get_value_int64 reads NaN and Infinity as 0 (the calling thread) and cuts 1.5 to 1.
  if (napi_get_cb_info(env, info, &argc, args, NULL, NULL) != napi_ok || argc != 1 ||
      napi_get_value_double(env, args[0], &value) != napi_ok || !(value >= 0 && value <= INT32_MAX) ||
      value != (double)(int32_t)value) {
    return throw_error(env, "EINVAL", "batch(tid) takes a thread id, a whole number (0: the calling thread)");
  }
  int32_t tid = (int32_t)value;
  struct sched_param param;
  memset(&param, 0, sizeof param);
  if (sched_setscheduler((pid_t)tid, SCHED_BATCH, &param) != 0) {
    int err = errno;
    return throw_error(env, errno_code(err), strerror(err));
  }
  return NULL;
}

NAPI_MODULE_INIT() {
  napi_value fn;
  if (napi_create_function(env, "batch", NAPI_AUTO_LENGTH, Batch, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "batch", fn) != napi_ok) return NULL;
  return exports;
}
