/// The JavaScript a query-server context (`settee couchjs`) evaluates once,
/// handed to the engine by ``QueryServer`` as it sets up its context (after the
/// engine's prelude of `sum`, `isArray`, `toJSON`): CouchDB's design-function globals (`start`, `send`, `getRow`,
/// `provides`, `registerType`), the search plugins' `index` and the `ddoc`
/// command. Map, reduce and the other commands are handled natively; only design
/// documents and `index` need this. Behaviour
/// follows CouchDB's query server (share/server/render.js, filter.js,
/// validate.js, loop.js, dreyfus.js, nouveau.js), written for Settee.
///
/// `__settee_print`, `__settee_readline` and `__settee_compileFunction` are the
/// natives the engine defines for it (`settee_js_context_install_query_server`);
/// the runtime takes them off the global. It runs in the context's host realm, whose built-ins are frozen afterwards: a
/// design function reaching this runtime's objects cannot change them.
enum QueryServerRuntime {
    static let source = #"""
(function (global) {
  "use strict";
  var print = global.__settee_print;
  var readline = global.__settee_readline;
  var compileFunction = global.__settee_compileFunction;
  delete global.__settee_print;
  delete global.__settee_readline;
  delete global.__settee_compileFunction;
  // Captured so that design code replacing these cannot break the protocol.
  var stringify = JSON.stringify;
  var parse = JSON.parse;
  var isArray = Array.isArray;

  function respond(value) {
    print(stringify(value));
  }

  // Errors stringify to {}; show their name and message instead.
  function errorToJSON(e) {
    if (e !== null && typeof e === "object" && "stack" in e && "name" in e && "message" in e) {
      return { error: e.name, message: e.message };
    }
    return e;
  }

  // How a thrown value reads in messages. Errors come from the functions' own
  // realms, so `instanceof Error` (this realm's) would not see them.
  var toStringTag = Object.prototype.toString;
  function describe(e) {
    if (toStringTag.call(e) === "[object Error]") return String(e);
    try {
      var json = stringify(e);
      if (json !== undefined) return json;
    } catch (ignored) {}
    return String(e);
  }

  function log(message) {
    if (typeof message !== "string") message = stringify(errorToJSON(message));
    respond(["log", String(message)]);
  }

  // --- Content negotiation: registerType, provides -------------------------

  var mimesByKey = {};
  var keysByMime = {};
  function registerType(key) {
    var mimes = Array.prototype.slice.call(arguments, 1);
    mimesByKey[key] = mimes;
    for (var i = 0; i < mimes.length; i++) keysByMime[mimes[i]] = key;
  }
  registerType("all", "*/*");
  registerType("text", "text/plain; charset=utf-8", "txt");
  registerType("html", "text/html; charset=utf-8");
  registerType("xhtml", "application/xhtml+xml", "xhtml");
  registerType("xml", "application/xml", "text/xml", "application/x-xml");
  registerType("js", "text/javascript", "application/javascript", "application/x-javascript");
  registerType("css", "text/css");
  registerType("ics", "text/calendar");
  registerType("csv", "text/csv");
  registerType("rss", "application/rss+xml");
  registerType("atom", "application/atom+xml");
  registerType("yaml", "application/x-yaml", "text/yaml");
  registerType("multipart_form", "multipart/form-data");
  registerType("url_encoded_form", "application/x-www-form-urlencoded");
  registerType("json", "application/json", "text/x-json");

  var providesUsed = false;
  var mimeFunctions = [];
  var responseContentType = null;

  function provides(type, fun) {
    providesUsed = true;
    mimeFunctions.push([type, fun]);
  }

  function resetProvides() {
    providesUsed = false;
    mimeFunctions = [];
    responseContentType = null;
  }

  // A media range "type/subtype; a=b; q=0.5" as [type, subtype, params], q
  // defaulting to "1" (RFC 2616 section 14.1).
  function parseMediaRange(range) {
    var parts = range.split(";");
    var params = {};
    for (var i = 0; i < parts.length; i++) {
      var pair = parts[i].split("=");
      if (pair.length === 2) params[pair[0].trim()] = pair[1].trim();
    }
    var full = parts[0].trim();
    if (full === "*") full = "*/*";
    var types = full.split("/");
    var q = parseFloat(params.q);
    if (!params.q || isNaN(q) || q > 1 || q < 0) params.q = "1";
    return [types[0], types[1], params];
  }

  function fitnessAndQuality(mime, ranges) {
    var bestFitness = -1;
    var bestQuality = 0;
    var target = parseMediaRange(mime);
    for (var i = 0; i < ranges.length; i++) {
      var range = ranges[i];
      var typeMatches = range[0] === target[0] || range[0] === "*" || target[0] === "*";
      var subtypeMatches = range[1] === target[1] || range[1] === "*" || target[1] === "*";
      if (!(typeMatches && subtypeMatches)) continue;
      var fitness = (range[0] === target[0] ? 100 : 0) + (range[1] === target[1] ? 10 : 0);
      for (var name in target[2]) {
        if (name !== "q" && range[2][name] && range[2][name] === target[2][name]) fitness += 1;
      }
      if (fitness > bestFitness) {
        bestFitness = fitness;
        bestQuality = range[2].q;
      }
    }
    return [bestFitness, parseFloat(bestQuality)];
  }

  // The supported type that best matches an Accept header, or "". Candidates
  // are ordered with the default (string) sort, exactly as CouchDB orders them.
  function bestMatch(supported, header) {
    var ranges = header.split(",").map(parseMediaRange);
    var weighted = supported.map(function (mime, index) {
      return [fitnessAndQuality(mime, ranges), index, mime];
    });
    weighted.sort();
    var best = weighted[weighted.length - 1];
    return best && best[0][1] ? best[2] : "";
  }

  function runProvides(req, ddoc) {
    var bestKey = null;
    var accept = req && req.headers ? req.headers["Accept"] : undefined;
    if (req && req.query && req.query.format) {
      bestKey = req.query.format;
      responseContentType = (mimesByKey[bestKey] || [])[0];
    } else if (accept) {
      var supported = [];
      // In place, as CouchDB does: later provides() calls win ties below.
      mimeFunctions.reverse().forEach(function (entry) {
        if (mimesByKey[entry[0]]) supported = supported.concat(mimesByKey[entry[0]]);
      });
      responseContentType = bestMatch(supported, accept);
      bestKey = keysByMime[responseContentType];
    } else {
      bestKey = mimeFunctions[0][0];
      responseContentType = (mimesByKey[bestKey] || [])[0];
    }
    var bestFunction;
    if (bestKey) {
      for (var i = 0; i < mimeFunctions.length; i++) {
        if (mimeFunctions[i][0] === bestKey) {
          bestFunction = mimeFunctions[i][1];
          break;
        }
      }
    }
    if (bestFunction) return bestFunction.call(ddoc);
    var supportedTypes = mimeFunctions.map(function (entry) {
      return (mimesByKey[entry[0]] || []).join(", ") || entry[0];
    });
    throw ["error", "not_acceptable",
      "Content-Type " + (accept || bestKey) + " not supported, try one of: " + supportedTypes.join(", ")];
  }

  // --- Rendering: shows, lists, updates, rewrites --------------------------

  var chunks = [];
  var startResponse = {};
  var headerPending = false;
  var gotRow = false;
  var lastRow = false;

  function resetList() {
    chunks = [];
    startResponse = {};
    headerPending = false;
    gotRow = false;
    lastRow = false;
  }

  function start(response) {
    startResponse = response || {};
    headerPending = true;
  }

  function send(chunk) {
    chunks.push(chunk.toString());
  }

  function applyContentType(response, contentType) {
    response.headers = response.headers || {};
    if (contentType) response.headers["Content-Type"] = response.headers["Content-Type"] || contentType;
    return response;
  }

  function sendStart() {
    startResponse = applyContentType(startResponse || {}, responseContentType);
    respond(["start", chunks, startResponse]);
    chunks = [];
    startResponse = {};
    headerPending = false;
  }

  function flushChunks(label) {
    if (headerPending) {
      respond([label || "chunks", chunks, startResponse]);
      headerPending = false;
    } else {
      respond([label || "chunks", chunks]);
    }
    chunks = [];
  }

  // The next view row of a list, or null after the last. The first call sends
  // the response head; each later one sends what the previous row produced.
  function getRow() {
    if (lastRow) return null;
    if (!gotRow) {
      gotRow = true;
      sendStart();
    } else {
      flushChunks();
    }
    var line = readline();
    if (line === null) throw ["fatal", "list_error", "the input ended inside a list"];
    var message = parse(line);
    if (message[0] === "list_end") {
      lastRow = true;
      return null;
    }
    if (message[0] !== "list_row") throw ["fatal", "list_error", "not a row '" + message[0] + "'"];
    return message[1];
  }

  function wrapResponse(response) {
    return typeof response === "string" ? { body: response } : response;
  }

  function typeOf(value) {
    if (value === null) return "null";
    if (isArray(value)) return "array";
    return typeof value;
  }

  function isProtocolError(e) {
    return e !== null && e !== undefined &&
      ((e.error && e.reason) || (isArray(e) && (e[0] === "error" || e[0] === "fatal")));
  }

  function renderError(e, errorType) {
    if (isProtocolError(e)) throw e;
    var message = "function raised error: " + describe(e) + " \nstacktrace: " + (e && e.stack);
    log(message);
    throw ["error", errorType || "render_error", message];
  }

  function runShow(fun, ddoc, args) {
    try {
      resetList();
      resetProvides();
      var response = wrapResponse(fun.apply(ddoc, args) || {});
      // start()/send() inside a show: the chunks come before the body.
      if (chunks.length > 0) {
        response.headers = response.headers || {};
        for (var header in startResponse) response.headers[header] = startResponse[header];
        response.body = chunks.join("") + (response.body || "");
        resetList();
      }
      if (providesUsed) {
        var provided = wrapResponse(runProvides(args[1], ddoc) || {});
        response.body = (response.body || "") + chunks.join("");
        response.body += provided.body || "";
        response = applyContentType(response, responseContentType);
        resetList();
      }
      var type = typeOf(response);
      if (type !== "object" && type !== "string") {
        throw ["error", "render_error", "undefined response from show function"];
      }
      respond(["resp", wrapResponse(response)]);
    } catch (e) {
      var info = args[1];
      if (args[0] === null && info && info.path && info.path.length > 5) {
        throw ["error", "not_found", "document not found"];
      }
      renderError(e);
    }
  }

  function runUpdate(fun, ddoc, args) {
    try {
      if (args[1] && args[1].method === "GET") {
        throw ["error", "method_not_allowed", "Update functions do not allow GET"];
      }
      var result = fun.apply(ddoc, args);
      var response = result[1];
      var type = typeOf(response);
      if (type !== "object" && type !== "string") {
        throw ["error", "render_error", "undefined response from update function"];
      }
      respond(["up", result[0], wrapResponse(response)]);
    } catch (e) {
      renderError(e);
    }
  }

  function runList(fun, ddoc, args) {
    try {
      resetProvides();
      resetList();
      var tail = fun.apply(ddoc, args);
      if (providesUsed) tail = runProvides(args[1], ddoc);
      // A list that never asked for rows still sends its head and reads one line.
      if (!gotRow) getRow();
      if (typeof tail !== "undefined") chunks.push(tail);
      flushChunks("end");
    } catch (e) {
      renderError(e);
    }
  }

  function runRewrite(fun, ddoc, args) {
    var result;
    try {
      result = fun.apply(ddoc, args);
    } catch (e) {
      renderError(e, "rewrite_error");
    }
    if (!result) {
      respond(["no_dispatch_rule"]);
      return;
    }
    if (typeof result === "string") result = { path: result, method: args[0].method };
    respond(["ok", result]);
  }

  // --- Filters and validation -----------------------------------------------

  function runFilter(fun, ddoc, args) {
    var docs = args[0];
    var req = args[1];
    var results = [];
    for (var i = 0; i < docs.length; i++) results.push(Boolean(fun.apply(ddoc, [docs[i], req])));
    respond([true, results]);
  }

  // A view's map function used as a filter: a document passes when it emits.
  function runViewFilter(fun, ddoc, args) {
    var docs = args[0];
    var results = [];
    var emitted = false;
    emitHandler = function () { emitted = true; };
    try {
      for (var i = 0; i < docs.length; i++) {
        emitted = false;
        fun(docs[i]);
        results.push(emitted);
      }
    } finally {
      emitHandler = null;
    }
    respond([true, results]);
  }

  function runValidate(fun, ddoc, args) {
    try {
      fun.apply(ddoc, args);
      respond(1);
    } catch (e) {
      // A thrown {forbidden: …} or {unauthorized: …} is the answer; a real
      // error is an error.
      if (e && e.name && e.stack) throw e;
      respond(e);
    }
  }

  // --- index(): search indexes (index_doc, nouveau_index_doc) ----------------
  //
  // Index functions run like map functions; each index() call is emitted as a
  // row whose value is the indexed field, and the native side answers the values.

  var mapEmit = global.emit;
  // "map" for map_doc, "dreyfus" for index_doc, "nouveau" for
  // nouveau_index_doc. As in couchjs, where emit() and index() each collect
  // into their own command's results (views.js, dreyfus.js, nouveau.js),
  // index() adds nothing to a map function's rows, nor emit() to an index
  // function's fields; both still check their arguments.
  var indexMode = "map";
  // What emit() does: add a row, or (a view used as a filter) note that the
  // document passes.
  var emitHandler = null;
  function emit(key, value) {
    if (emitHandler !== null) return emitHandler(key, value);
    if (indexMode !== "map") return;
    return mapEmit(key, value);
  }

  function typeError(message) {
    return { name: "TypeError", message: message };
  }

  function rejectReservedName(name) {
    if (name.substring(0, 1) === "_") throw { name: "ReservedName", message: "name must not start with an underscore" };
  }

  function expectType(what, expected, value) {
    if (typeof value !== expected) {
      throw typeError("type of " + what + " must be a " + expected + " not " + typeof value);
    }
  }

  // Dreyfus (Clouseau): index(name, value, options) gives [name, value, options].
  function dreyfusIndex(name, value, options) {
    if (typeof name !== "string") throw typeError("name must be a string not " + typeof name);
    rejectReservedName(name);
    if (typeof value !== "string" && typeof value !== "number" && typeof value !== "boolean") {
      throw typeError("value must be a string, a number or boolean not " + typeof value);
    }
    if (options && typeof options !== "object") throw typeError("options must be an object not " + typeof options);
    if (indexMode === "dreyfus") mapEmit(null, [name, value, options || {}]);
  }

  // Nouveau: index(type, name, value, options) gives {"@type", name, value, …}.
  function nouveauIndex(type, name, value, options) {
    expectType("type", "string", type);
    expectType("name", "string", name);
    rejectReservedName(name);
    options = options || {};
    switch (type) {
      case "double":
      case "string":
        expectType("value", type === "double" ? "number" : "string", value);
        mapEmit(null, { "@type": type, name: name, value: value, store: options.store, facet: options.facet });
        break;
      case "text":
        expectType("value", "string", value);
        mapEmit(null, { "@type": type, name: name, value: value, store: options.store });
        break;
      case "stored":
        if (typeof value !== "number" && typeof value !== "string") {
          throw typeError("type of " + value + " must be a string or number");
        }
        mapEmit(null, { "@type": type, name: name, value: value });
        break;
      default:
        throw typeError(type + " not supported");
    }
  }

  function index() {
    return (indexMode === "nouveau" ? nouveauIndex : dreyfusIndex).apply(null, arguments);
  }

  // --- The ddoc command -------------------------------------------------------

  var runners = {
    lists: runList,
    shows: runShow,
    filters: runFilter,
    views: runViewFilter,
    updates: runUpdate,
    validate_doc_update: runValidate,
    rewrites: runRewrite
  };
  var designDocuments = new Map();

  function compile(source, ddoc, name) {
    var fun;
    try {
      fun = compileFunction(source, name, ddoc);
    } catch (e) {
      throw ["error", "compilation_error", describe(e) + " (" + source + ")"];
    }
    if (typeof fun !== "function") {
      throw ["error", "compilation_error", "Expression does not eval to a function. (" + String(source) + ")"];
    }
    return fun;
  }

  function runDesignDocument(id, path, args) {
    if (id === "new") {
      designDocuments.set(path, args);
      respond(true);
      return;
    }
    var ddoc = designDocuments.get(id);
    if (!ddoc) throw ["fatal", "query_protocol_error", "uncached design doc: " + id];
    if (!isArray(path) || path.length === 0) throw ["fatal", "query_protocol_error", "no function path"];
    var command = path[0];
    if (!Object.prototype.hasOwnProperty.call(runners, command)) {
      throw ["fatal", "unknown_command", "unknown ddoc command '" + command + "'"];
    }
    var point = ddoc;
    var last = path.length - 1;
    for (var i = 0; i < last; i++) {
      point = point[path[i]];
      if (point === null || typeof point !== "object") break;
    }
    var fun = point !== null && typeof point === "object" ? point[path[last]] : undefined;
    if (!fun) {
      throw ["error", "not_found", "missing " + command + " function " + path[last] + " on design doc " + id];
    }
    if (typeof fun !== "function") {
      // Compiled once, then kept in place of its source.
      fun = compile(fun, ddoc, path.join("."));
      point[path[last]] = fun;
    }
    runners[command](fun, ddoc, args);
  }

  // What the native side writes for a failed command: ["error", type, reason],
  // or ["fatal", type, reason] when the process must exit.
  function failure(e) {
    if (isArray(e) && e[0] === "fatal") return ["fatal", e[1], e[2]];
    if (isArray(e) && e[0] === "error") return e;
    if (e && e.name === "InternalError") return ["fatal", e.name, e.message];
    if (e && e.error && e.reason) return ["error", e.error, e.reason];
    if (e && e.name) return ["error", e.name, String(e.message)];
    return ["error", "unnamed_error", describe(e)];
  }

  // The globals every function's realm gets (Prelude.h gives it the map
  // globals), and the entry points the native side calls.
  return {
    sandboxGlobals: {
      log: log,
      emit: emit,
      start: start,
      send: send,
      getRow: getRow,
      provides: provides,
      registerType: registerType,
      index: index
    },
    // "map" for map_doc, "dreyfus" for index_doc, "nouveau" for nouveau_index_doc.
    setIndexMode: function (mode) {
      indexMode = mode;
      return null;
    },
    // Called with a whole ["ddoc", …] line; null when the answer was written.
    ddoc: function (command, id, path, args) {
      try {
        runDesignDocument(id, path, args);
        return null;
      } catch (e) {
        return failure(e);
      }
    }
  };
})(this);
"""#
}
