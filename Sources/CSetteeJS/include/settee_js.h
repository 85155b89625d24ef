// Settee's SpiderMonkey shim: a plain C interface to an embedded SpiderMonkey 102.
//
// Only UTF-8 JSON text and plain structs cross this boundary. A context belongs
// to the thread that created it: every call taking a context must come from
// that thread, except `settee_js_context_interrupt`.
#ifndef SETTEE_JS_H
#define SETTEE_JS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// What went wrong, if anything.
typedef enum {
    SETTEE_JS_OK = 0,
    /// The source did not compile, or did not evaluate to a function.
    SETTEE_JS_COMPILE_ERROR = 1,
    /// The function threw.
    SETTEE_JS_RUNTIME_ERROR = 2,
    /// The call ran past its deadline and was interrupted.
    SETTEE_JS_TIMEOUT = 3,
    /// The engine ran out of memory (its GC heap limit or the call's memory limit).
    SETTEE_JS_OUT_OF_MEMORY = 4,
    /// The input JSON could not be parsed by the engine.
    SETTEE_JS_INVALID_INPUT = 5,
    /// The call was interrupted from another thread.
    SETTEE_JS_INTERRUPTED = 6,
    /// Anything else (engine could not start, bad handle).
    SETTEE_JS_INTERNAL_ERROR = 7,
} settee_js_status;

/// A failure. Strings are UTF-8, owned by the context, valid until its next call.
typedef struct {
    settee_js_status status;
    const char *message;
    size_t message_length;
    const char *stack;
    size_t stack_length;
    /// 1-based line and column in the compiled source; 0 when unknown.
    uint32_t line;
    uint32_t column;
} settee_js_error;

typedef struct {
    /// Bound on the GC heap (JSGC_MAX_BYTES); 0 keeps the engine's default.
    uint64_t gc_heap_limit_bytes;
    /// Native stack the engine may use on this thread; must be below the
    /// thread's real stack size. 0 keeps the engine's default.
    uint64_t native_stack_quota_bytes;
    /// Per-call time limit in milliseconds; 0 means none.
    uint32_t timeout_milliseconds;
    /// Bound on how much one call may grow the process's anonymous resident
    /// memory (what the GC heap limit misses: array elements, strings, typed
    /// arrays); a call past it fails with SETTEE_JS_OUT_OF_MEMORY. 0 means none.
    /// Checked every few milliseconds, on Linux.
    uint64_t memory_limit_bytes;
    /// The most memory (heap and what it mallocs, after a collection) the
    /// functions may keep between calls, in globals. When a call leaves more,
    /// it fails with SETTEE_JS_OUT_OF_MEMORY and the context's global state is
    /// reset: a new global, every compiled function compiled again under its
    /// handle. Checked each time the process has grown by a step. 0 means none.
    uint64_t kept_memory_limit_bytes;
    /// The most JSON one map function may emit for one document; past it,
    /// `emit` throws and the function fails for that document. 0 means none.
    uint64_t emit_limit_bytes;
    /// Whether `eval` and `new Function` may run (CouchDB blocks them).
    bool allow_code_generation;
} settee_js_context_options;

/// A context's output buffer, valid until its next call. See `settee_js_map_document`
/// and `settee_js_call` for the layout; integers are native-endian uint32.
typedef struct {
    const uint8_t *bytes;
    size_t length;
} settee_js_output;

typedef struct settee_js_context settee_js_context;

/// Starts the engine once per process; later calls return the first result.
bool settee_js_initialize(void);
/// Shuts the engine down. Every context must have been destroyed first.
void settee_js_shut_down(void);

/// Creates a context bound to the calling thread, or NULL (with `error` set).
settee_js_context *settee_js_context_create(const settee_js_context_options *options,
                                            settee_js_error *error);
/// Destroys a context, on the thread that created it.
void settee_js_context_destroy(settee_js_context *context);
/// Changes the per-call time limit.
void settee_js_context_set_timeout(settee_js_context *context, uint32_t milliseconds);
/// Interrupts the call running on `context`, if any. Safe from any thread.
void settee_js_context_interrupt(settee_js_context *context);

/// Forgets an interrupt requested while no call was running, which would
/// otherwise stop the next call. Only on the context's own thread, between calls.
void settee_js_context_clear_interrupt(settee_js_context *context);
/// Runs a full garbage collection.
void settee_js_context_collect_garbage(settee_js_context *context);

/// Compiles CouchDB-style function source (`function (doc) {…}`; a trailing
/// `;` and comments are tolerated). `name` is used as the file name in errors.
/// Each function gets a realm of its own (its own global and built-ins, as
/// each function in couchjs gets its own sandbox): what one function changes
/// is never seen by another. Documents and arguments are parsed in the
/// context's host realm, whose built-ins are frozen and which runs no
/// function, so one parse serves every function.
/// `library_json`, when not NULL, is a JSON object of CommonJS modules that the
/// function can load with `require` (CouchDB's `views.lib`, keyed as in the
/// design document: `{"views": {"lib": {…}}}`).
/// Returns a handle >= 0, or -1 with `error` set.
int32_t settee_js_compile(settee_js_context *context,
                          const char *source, size_t source_length,
                          const char *name,
                          const char *library_json, size_t library_json_length,
                          settee_js_error *error);
/// Releases a compiled function and its realm.
void settee_js_release(settee_js_context *context, int32_t function);

/// Parses `document` (UTF-8 JSON) once, deep-freezes it, and runs each map
/// function on it, collecting what they `emit`.
///
/// Returns SETTEE_JS_OK with `output` set, or an error when the document itself
/// could not be used (no function ran). Output, for each function in order:
///   u32 status; if status == 0: u32 row count, then per row
///     u32 key length, key JSON, u32 value length, value JSON;
///   else: u32 line, u32 column, u32 message length, message,
///     u32 stack length, stack.
/// then u32 log count, each u32 length + message (from `log()`).
settee_js_status settee_js_map_document(settee_js_context *context,
                                        const int32_t *functions, size_t function_count,
                                        const char *document, size_t document_length,
                                        settee_js_output *output,
                                        settee_js_error *error);

/// Parses `arguments_json` (a JSON array) once and calls each function with
/// those arguments (e.g. `[keys, values, rereduce]` for reduce).
///
/// Returns SETTEE_JS_OK with `output` set, or an error when the arguments
/// could not be parsed. Output, for each function in order:
///   u32 status; if 0: u32 length + result JSON (`null` for undefined);
///   else as in `settee_js_map_document`;
/// then the log messages as there.
settee_js_status settee_js_call(settee_js_context *context,
                                const int32_t *functions, size_t function_count,
                                const char *arguments_json, size_t arguments_json_length,
                                settee_js_output *output,
                                settee_js_error *error);

/// The input and output of a query server (`settee couchjs`), called back from
/// JavaScript on the context's thread.
typedef struct {
    void *info;
    /// Writes one line of output (without its newline).
    void (*write_line)(void *info, const char *bytes, size_t length);
    /// Reads the next line of input (without its newline) into memory the host
    /// owns until its next call. Returns false at the end of input.
    bool (*read_line)(void *info, const char **bytes, size_t *length);
} settee_js_host;

/// Turns `context` into a CouchDB query server: defines the natives
/// `__settee_print`, `__settee_readline` and `__settee_compileFunction`, then
/// evaluates `runtime_source` (UTF-8; the query server's runtime, which takes
/// those natives off the global and returns `{sandboxGlobals, ddoc,
/// setIndexMode}`: the design-function globals `start`, `send`, `getRow`,
/// `provides`, `registerType`, a `log` that writes `["log", message]` lines
/// through `host`, and the ddoc dispatcher). Time spent waiting for input inside
/// `getRow()` does not count against the call's time limit.
/// Returns false with `error` set when the runtime could not be set up.
/// Must come before any function is compiled on the context. Each compiled
/// function's realm then also gets the design-function globals; design
/// functions compiled by the runtime get a realm each too. `ddoc_function` is
/// set to the handle of `ddoc(command, id, path, args)`, which answers a
/// `["ddoc", …]` command (null when it wrote the answer, else the error
/// triple), and `index_mode_function` to `setIndexMode(mode)`.
bool settee_js_context_install_query_server(settee_js_context *context, const settee_js_host *host,
                                            const char *runtime_source, size_t runtime_length,
                                            int32_t *ddoc_function, int32_t *index_mode_function,
                                            settee_js_error *error);

#ifdef __cplusplus
}
#endif

#endif
