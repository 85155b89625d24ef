// The JavaScript each function's realm evaluates as it is made: CouchDB's map
// globals that are plain JavaScript, and, for functions that can `require`
// (views.lib, design functions), the maker of the CommonJS `require`, which
// the runtime keeps. Each is parsed once per context and instantiated per
// realm; making a realm's standard classes is most of its cost, so neither
// touches more of them than it must (no array methods here).
#pragma once

namespace settee {

// `emit` and `log` are native (see SpiderMonkeyShim.cpp).
static const char kPreludeSource[] = R"JS(
var sum = function (values) {
  var rv = 0;
  for (var i in values) {
    rv += values[i];
  }
  return rv;
};
var isArray = function (obj) {
  return Object.prototype.toString.call(obj) === "[object Array]";
};
var toJSON = function (value) {
  return JSON.stringify(value);
};
// Read-only, as emit and log.
Object.defineProperty(this, "sum", { writable: false });
Object.defineProperty(this, "isArray", { writable: false });
Object.defineProperty(this, "toJSON", { writable: false });
)JS";

// Its value is the maker of `require`. `__settee_compileModule` is native, so
// modules compile even while `eval` is blocked; it is taken off the global.
static const char kRequireSource[] = R"JS(
(function (global) {
  var compileModule = global.__settee_compileModule;
  delete global.__settee_compileModule;
  // CouchDB's require (share/server/util.js): a path resolves from the design
  // document's root (`views/lib/name`), also inside a module; `.` and `..`
  // relative to the requiring module. Not a global: the runtime keeps it, so
  // no function can hand it a document's code to run.
  return function (root) {
    var cache = {};
    function invalid(reason) {
      return ["error", "invalid_require_path", reason];
    }
    function resolve(names, mod, top) {
      if (names.length === 0) {
        if (typeof mod.current !== "string") {
          throw invalid("Must require a JavaScript string, not: " + (typeof mod.current));
        }
        return { current: mod.current, parent: mod.parent, id: mod.id, exports: {} };
      }
      var n = names.shift();
      // A module's node is its place in the tree: "." is the object holding
      // it, ".." that object's parent.
      if (n === "..") {
        if (!(mod && mod.parent && mod.parent.parent)) {
          throw invalid("Object has no parent " + JSON.stringify(mod && mod.current));
        }
        return resolve(names, mod.parent.parent);
      } else if (n === ".") {
        if (!mod || !mod.parent) {
          throw invalid("Object has no parent " + JSON.stringify(mod && mod.current));
        }
        return resolve(names, mod.parent);
      } else if (top) {
        mod = { current: top, id: "" };
      }
      if (mod.current === null || typeof mod.current !== "object" || mod.current[n] === undefined) {
        throw invalid("Object has no property \"" + n + "\". " + JSON.stringify(mod.current));
      }
      return resolve(names, { current: mod.current[n], parent: mod, id: mod.id ? mod.id + "/" + n : n });
    }
    function require(name, parent) {
      if (!name) {
        throw invalid("require() needs a module path");
      }
      var module = resolve(String(name).split("/"), parent, root);
      if (!Object.prototype.hasOwnProperty.call(cache, module.id)) {
        // An empty exports object first stops circular requires from recursing forever.
        cache[module.id] = {};
        try {
          var fn = compileModule(module.current, module.id);
          fn.call(global, module, module.exports, function (child) { return require(child, module); });
        } catch (e) {
          // A module that failed to load fails every require the same way.
          delete cache[module.id];
          throw e;
        }
        cache[module.id] = module.exports;
      }
      return cache[module.id];
    }
    return function (name) { return require(name); };
  };
})(this);
)JS";

}  // namespace settee
