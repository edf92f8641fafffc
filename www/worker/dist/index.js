var __defProp = Object.defineProperty;
var __name = (target, value) => __defProp(target, "name", { value, configurable: true });
var __export = (target, all) => {
  for (var name in all)
    __defProp(target, name, { get: all[name], enumerable: true });
};

// ../../pkg/workerd.js
import wasmModule2 from "./4ed3c6888ba908ead1074bd5d3acc21574ade3b7-sextant_wasm_bg.wasm";

// ../../pkg/sextant_wasm.js
var sextant_wasm_exports = {};
__export(sextant_wasm_exports, {
  Engine: () => Engine,
  default: () => __wbg_init,
  fetchBytes: () => fetchBytes,
  initSync: () => initSync,
  systemPrompt: () => systemPrompt,
  verifyCitations: () => verifyCitations
});
var Engine = class _Engine {
  static {
    __name(this, "Engine");
  }
  static __wrap(ptr) {
    const obj = Object.create(_Engine.prototype);
    obj.__wbg_ptr = ptr;
    EngineFinalization.register(obj, obj.__wbg_ptr, obj);
    return obj;
  }
  __destroy_into_raw() {
    const ptr = this.__wbg_ptr;
    this.__wbg_ptr = 0;
    EngineFinalization.unregister(this);
    return ptr;
  }
  free() {
    const ptr = this.__destroy_into_raw();
    wasm.__wbg_engine_free(ptr, 0);
  }
  /**
   * The query embedding of `text` (for parity checks).
   * @param {string} text
   * @returns {Float32Array}
   */
  embed(text) {
    const ptr0 = passStringToWasm0(text, wasm.__wbindgen_malloc_command_export, wasm.__wbindgen_realloc_command_export);
    const len0 = WASM_VECTOR_LEN;
    const ret = wasm.engine_embed(this.__wbg_ptr, ptr0, len0);
    if (ret[3]) {
      throw takeFromExternrefTable0(ret[2]);
    }
    var v2 = getArrayF32FromWasm0(ret[0], ret[1]).slice();
    wasm.__wbindgen_free_command_export(ret[0], ret[1] * 4, 4);
    return v2;
  }
  /**
   * `frame(results, {tokenBudget})` → `{context, included, omitted, tokens, budget, systemPrompt}`.
   * @param {any} results
   * @param {any} options
   * @returns {any}
   */
  frame(results, options) {
    const ret = wasm.engine_frame(this.__wbg_ptr, results, options);
    if (ret[2]) {
      throw takeFromExternrefTable0(ret[1]);
    }
    return takeFromExternrefTable0(ret[0]);
  }
  /**
   * `await Engine.fromUrls(bundleUrl, modelUrl?, tokenizerUrl?, options?, onProgress?)`:
   * fetches the files (calling `onProgress({file, loaded, total})` as bytes arrive), then
   * loads as the constructor does.
   * @param {string} bundle_url
   * @param {string | null | undefined} model_url
   * @param {string | null | undefined} tokenizer_url
   * @param {any} options
   * @param {Function | null} [on_progress]
   * @returns {Promise<Engine>}
   */
  static fromUrls(bundle_url, model_url, tokenizer_url, options, on_progress) {
    let ptr0, len0, ptr1, len1, ptr2, len2;
    try {
      ptr0 = passStringToWasm0(bundle_url, wasm.__wbindgen_malloc_command_export, wasm.__wbindgen_realloc_command_export);
      len0 = WASM_VECTOR_LEN;
      ptr1 = isLikeNone(model_url) ? 0 : passStringToWasm0(model_url, wasm.__wbindgen_malloc_command_export, wasm.__wbindgen_realloc_command_export);
      len1 = WASM_VECTOR_LEN;
      ptr2 = isLikeNone(tokenizer_url) ? 0 : passStringToWasm0(tokenizer_url, wasm.__wbindgen_malloc_command_export, wasm.__wbindgen_realloc_command_export);
      len2 = WASM_VECTOR_LEN;
    } catch (e) {
      if (ptr2) {
        wasm.__wbindgen_free_command_export(ptr2, len2 * 1, 1);
      }
      if (ptr1) {
        wasm.__wbindgen_free_command_export(ptr1, len1 * 1, 1);
      }
      if (ptr0) {
        wasm.__wbindgen_free_command_export(ptr0, len0 * 1, 1);
      }
      throw e;
    }
    const ret = wasm.engine_fromUrls(ptr0, len0, ptr1, len1, ptr2, len2, options, isLikeNone(on_progress) ? 0 : addToExternrefTable0(on_progress));
    return ret;
  }
  /**
   * The bundle's manifest.
   * @returns {any}
   */
  manifest() {
    const ret = wasm.engine_manifest(this.__wbg_ptr);
    if (ret[2]) {
      throw takeFromExternrefTable0(ret[1]);
    }
    return takeFromExternrefTable0(ret[0]);
  }
  /**
   * `new Engine(bundle, model?, tokenizer?, options?)` from bytes. Without a model only
   * keyword search works. `options` is reserved (pass nothing).
   * @param {Uint8Array | number[]} bundle
   * @param {Uint8Array | number[] | null | undefined} model
   * @param {Uint8Array | number[] | null | undefined} tokenizer
   * @param {any} options
   */
  constructor(bundle, model, tokenizer, options) {
    let ptr0, len0, ptr1, len1, ptr2, len2;
    try {
      ptr0 = passArray8ToWasm0(bundle, wasm.__wbindgen_malloc_command_export);
      len0 = WASM_VECTOR_LEN;
      ptr1 = isLikeNone(model) ? 0 : passArray8ToWasm0(model, wasm.__wbindgen_malloc_command_export);
      len1 = WASM_VECTOR_LEN;
      ptr2 = isLikeNone(tokenizer) ? 0 : passArray8ToWasm0(tokenizer, wasm.__wbindgen_malloc_command_export);
      len2 = WASM_VECTOR_LEN;
    } catch (e) {
      if (ptr2) {
        wasm.__wbindgen_free_command_export(ptr2, len2 * 1, 1);
      }
      if (ptr1) {
        wasm.__wbindgen_free_command_export(ptr1, len1 * 1, 1);
      }
      if (ptr0) {
        wasm.__wbindgen_free_command_export(ptr0, len0 * 1, 1);
      }
      throw e;
    }
    const ret = wasm.engine_new(ptr0, len0, ptr1, len1, ptr2, len2, options);
    if (ret[2]) {
      throw takeFromExternrefTable0(ret[1]);
    }
    this.__wbg_ptr = ret[0];
    EngineFinalization.register(this, this.__wbg_ptr, this);
    return this;
  }
  /**
   * `search(query, {k, mode, threshold, minSimilarity, perDocument, depth, vectorSearch})` →
   * `{results, timings, vector_method}`; each result has the fields of `sextant search --json`.
   * @param {string} query
   * @param {any} options
   * @returns {any}
   */
  search(query2, options) {
    const ptr0 = passStringToWasm0(query2, wasm.__wbindgen_malloc_command_export, wasm.__wbindgen_realloc_command_export);
    const len0 = WASM_VECTOR_LEN;
    const ret = wasm.engine_search(this.__wbg_ptr, ptr0, len0, options);
    if (ret[2]) {
      throw takeFromExternrefTable0(ret[1]);
    }
    return takeFromExternrefTable0(ret[0]);
  }
  /**
   * The model's token ids for `text` (special tokens added, truncated at the window).
   * @param {string} text
   * @returns {Uint32Array}
   */
  tokenIds(text) {
    const ptr0 = passStringToWasm0(text, wasm.__wbindgen_malloc_command_export, wasm.__wbindgen_realloc_command_export);
    const len0 = WASM_VECTOR_LEN;
    const ret = wasm.engine_tokenIds(this.__wbg_ptr, ptr0, len0);
    if (ret[3]) {
      throw takeFromExternrefTable0(ret[2]);
    }
    var v2 = getArrayU32FromWasm0(ret[0], ret[1]).slice();
    wasm.__wbindgen_free_command_export(ret[0], ret[1] * 4, 4);
    return v2;
  }
};
if (Symbol.dispose) Engine.prototype[Symbol.dispose] = Engine.prototype.free;
function fetchBytes(url, file, on_progress) {
  let ptr0, len0, ptr1, len1;
  try {
    ptr0 = passStringToWasm0(url, wasm.__wbindgen_malloc_command_export, wasm.__wbindgen_realloc_command_export);
    len0 = WASM_VECTOR_LEN;
    ptr1 = passStringToWasm0(file, wasm.__wbindgen_malloc_command_export, wasm.__wbindgen_realloc_command_export);
    len1 = WASM_VECTOR_LEN;
  } catch (e) {
    if (ptr1) {
      wasm.__wbindgen_free_command_export(ptr1, len1 * 1, 1);
    }
    if (ptr0) {
      wasm.__wbindgen_free_command_export(ptr0, len0 * 1, 1);
    }
    throw e;
  }
  const ret = wasm.fetchBytes(ptr0, len0, ptr1, len1, isLikeNone(on_progress) ? 0 : addToExternrefTable0(on_progress));
  return ret;
}
__name(fetchBytes, "fetchBytes");
function systemPrompt() {
  let deferred1_0;
  let deferred1_1;
  try {
    const ret = wasm.systemPrompt();
    deferred1_0 = ret[0];
    deferred1_1 = ret[1];
    return getStringFromWasm0(ret[0], ret[1]);
  } finally {
    wasm.__wbindgen_free_command_export(deferred1_0, deferred1_1, 1);
  }
}
__name(systemPrompt, "systemPrompt");
function verifyCitations(answer, sent) {
  const ptr0 = passStringToWasm0(answer, wasm.__wbindgen_malloc_command_export, wasm.__wbindgen_realloc_command_export);
  const len0 = WASM_VECTOR_LEN;
  const ret = wasm.verifyCitations(ptr0, len0, sent);
  if (ret[2]) {
    throw takeFromExternrefTable0(ret[1]);
  }
  return takeFromExternrefTable0(ret[0]);
}
__name(verifyCitations, "verifyCitations");
function __wbg_get_imports() {
  const import0 = {
    __proto__: null,
    __wbg_Error_208446807d0d1e30: /* @__PURE__ */ __name(function(arg0, arg1) {
      const ret = Error(getStringFromWasm0(arg0, arg1));
      return ret;
    }, "__wbg_Error_208446807d0d1e30"),
    __wbg_String_8564e559799eccda: /* @__PURE__ */ __name(function(arg0, arg1) {
      const ret = String(arg1);
      const ptr1 = passStringToWasm0(ret, wasm.__wbindgen_malloc_command_export, wasm.__wbindgen_realloc_command_export);
      const len1 = WASM_VECTOR_LEN;
      getDataViewMemory0().setInt32((arg0 >>> 0) + 4 * 1, len1, true);
      getDataViewMemory0().setInt32((arg0 >>> 0) + 4 * 0, ptr1, true);
    }, "__wbg_String_8564e559799eccda"),
    __wbg___wbindgen_bigint_get_as_i64_11da4b52cd0aedef: /* @__PURE__ */ __name(function(arg0, arg1) {
      const v = arg1;
      const ret = typeof v === "bigint" ? v : void 0;
      getDataViewMemory0().setBigInt64((arg0 >>> 0) + 8 * 1, isLikeNone(ret) ? BigInt(0) : ret, true);
      getDataViewMemory0().setInt32((arg0 >>> 0) + 4 * 0, !isLikeNone(ret), true);
    }, "__wbg___wbindgen_bigint_get_as_i64_11da4b52cd0aedef"),
    __wbg___wbindgen_boolean_get_4f1baf9a00be3c74: /* @__PURE__ */ __name(function(arg0) {
      const v = arg0;
      const ret = typeof v === "boolean" ? v : void 0;
      return isLikeNone(ret) ? 16777215 : ret ? 1 : 0;
    }, "__wbg___wbindgen_boolean_get_4f1baf9a00be3c74"),
    __wbg___wbindgen_debug_string_f249a2a76caa9a55: /* @__PURE__ */ __name(function(arg0, arg1) {
      const ret = debugString(arg1);
      const ptr1 = passStringToWasm0(ret, wasm.__wbindgen_malloc_command_export, wasm.__wbindgen_realloc_command_export);
      const len1 = WASM_VECTOR_LEN;
      getDataViewMemory0().setInt32((arg0 >>> 0) + 4 * 1, len1, true);
      getDataViewMemory0().setInt32((arg0 >>> 0) + 4 * 0, ptr1, true);
    }, "__wbg___wbindgen_debug_string_f249a2a76caa9a55"),
    __wbg___wbindgen_in_3f58a9d3b3a7eed2: /* @__PURE__ */ __name(function(arg0, arg1) {
      const ret = arg0 in arg1;
      return ret;
    }, "__wbg___wbindgen_in_3f58a9d3b3a7eed2"),
    __wbg___wbindgen_is_bigint_5fa10641e039d3ef: /* @__PURE__ */ __name(function(arg0) {
      const ret = typeof arg0 === "bigint";
      return ret;
    }, "__wbg___wbindgen_is_bigint_5fa10641e039d3ef"),
    __wbg___wbindgen_is_function_741ff2bb612836f5: /* @__PURE__ */ __name(function(arg0) {
      const ret = typeof arg0 === "function";
      return ret;
    }, "__wbg___wbindgen_is_function_741ff2bb612836f5"),
    __wbg___wbindgen_is_null_c22311b1cc228e3a: /* @__PURE__ */ __name(function(arg0) {
      const ret = arg0 === null;
      return ret;
    }, "__wbg___wbindgen_is_null_c22311b1cc228e3a"),
    __wbg___wbindgen_is_object_8b968c3ab8e96595: /* @__PURE__ */ __name(function(arg0) {
      const val = arg0;
      const ret = typeof val === "object" && val !== null;
      return ret;
    }, "__wbg___wbindgen_is_object_8b968c3ab8e96595"),
    __wbg___wbindgen_is_string_fc456fee5d3317de: /* @__PURE__ */ __name(function(arg0) {
      const ret = typeof arg0 === "string";
      return ret;
    }, "__wbg___wbindgen_is_string_fc456fee5d3317de"),
    __wbg___wbindgen_is_undefined_be5b34249ff1fc15: /* @__PURE__ */ __name(function(arg0) {
      const ret = arg0 === void 0;
      return ret;
    }, "__wbg___wbindgen_is_undefined_be5b34249ff1fc15"),
    __wbg___wbindgen_jsval_eq_38d7bfbe4cc84039: /* @__PURE__ */ __name(function(arg0, arg1) {
      const ret = arg0 === arg1;
      return ret;
    }, "__wbg___wbindgen_jsval_eq_38d7bfbe4cc84039"),
    __wbg___wbindgen_jsval_loose_eq_b2f214e2e4b30e36: /* @__PURE__ */ __name(function(arg0, arg1) {
      const ret = arg0 == arg1;
      return ret;
    }, "__wbg___wbindgen_jsval_loose_eq_b2f214e2e4b30e36"),
    __wbg___wbindgen_number_get_934b640d0889af78: /* @__PURE__ */ __name(function(arg0, arg1) {
      const obj = arg1;
      const ret = typeof obj === "number" ? obj : void 0;
      getDataViewMemory0().setFloat64((arg0 >>> 0) + 8 * 1, isLikeNone(ret) ? 0 : ret, true);
      getDataViewMemory0().setInt32((arg0 >>> 0) + 4 * 0, !isLikeNone(ret), true);
    }, "__wbg___wbindgen_number_get_934b640d0889af78"),
    __wbg___wbindgen_string_get_7ce8eee7fd327545: /* @__PURE__ */ __name(function(arg0, arg1) {
      const obj = arg1;
      const ret = typeof obj === "string" ? obj : void 0;
      var ptr1 = isLikeNone(ret) ? 0 : passStringToWasm0(ret, wasm.__wbindgen_malloc_command_export, wasm.__wbindgen_realloc_command_export);
      var len1 = WASM_VECTOR_LEN;
      getDataViewMemory0().setInt32((arg0 >>> 0) + 4 * 1, len1, true);
      getDataViewMemory0().setInt32((arg0 >>> 0) + 4 * 0, ptr1, true);
    }, "__wbg___wbindgen_string_get_7ce8eee7fd327545"),
    __wbg___wbindgen_throw_4c88d8bf264fd984: /* @__PURE__ */ __name(function(arg0, arg1) {
      throw new Error(getStringFromWasm0(arg0, arg1));
    }, "__wbg___wbindgen_throw_4c88d8bf264fd984"),
    __wbg__wbg_cb_unref_09736879a3f67559: /* @__PURE__ */ __name(function(arg0) {
      arg0._wbg_cb_unref();
    }, "__wbg__wbg_cb_unref_09736879a3f67559"),
    __wbg_call_40b008ba32f73991: /* @__PURE__ */ __name(function() {
      return handleError(function(arg0, arg1) {
        const ret = arg0.call(arg1);
        return ret;
      }, arguments);
    }, "__wbg_call_40b008ba32f73991"),
    __wbg_call_a410eb4b59ed5965: /* @__PURE__ */ __name(function() {
      return handleError(function(arg0, arg1, arg2) {
        const ret = arg0.call(arg1, arg2);
        return ret;
      }, arguments);
    }, "__wbg_call_a410eb4b59ed5965"),
    __wbg_done_57e08d0be6e30c02: /* @__PURE__ */ __name(function(arg0) {
      const ret = arg0.done;
      return ret;
    }, "__wbg_done_57e08d0be6e30c02"),
    __wbg_engine_new: /* @__PURE__ */ __name(function(arg0) {
      const ret = Engine.__wrap(arg0);
      return ret;
    }, "__wbg_engine_new"),
    __wbg_entries_7bb1459bd9b5c2b9: /* @__PURE__ */ __name(function(arg0) {
      const ret = Object.entries(arg0);
      return ret;
    }, "__wbg_entries_7bb1459bd9b5c2b9"),
    __wbg_getRandomValues_5d8c030b527203a6: /* @__PURE__ */ __name(function() {
      return handleError(function(arg0, arg1) {
        globalThis.crypto.getRandomValues(getArrayU8FromWasm0(arg0, arg1));
      }, arguments);
    }, "__wbg_getRandomValues_5d8c030b527203a6"),
    __wbg_getRandomValues_8b6f1f663e6f188d: /* @__PURE__ */ __name(function() {
      return handleError(function(arg0, arg1) {
        globalThis.crypto.getRandomValues(getArrayU8FromWasm0(arg0, arg1));
      }, arguments);
    }, "__wbg_getRandomValues_8b6f1f663e6f188d"),
    __wbg_get_2080c49015e35254: /* @__PURE__ */ __name(function() {
      return handleError(function(arg0, arg1) {
        const ret = Reflect.get(arg0, arg1);
        return ret;
      }, arguments);
    }, "__wbg_get_2080c49015e35254"),
    __wbg_get_635eea311fa1a291: /* @__PURE__ */ __name(function() {
      return handleError(function(arg0, arg1) {
        const ret = Reflect.get(arg0, arg1);
        return ret;
      }, arguments);
    }, "__wbg_get_635eea311fa1a291"),
    __wbg_get_d7176cfb76d71114: /* @__PURE__ */ __name(function(arg0, arg1) {
      const ret = arg0[arg1 >>> 0];
      return ret;
    }, "__wbg_get_d7176cfb76d71114"),
    __wbg_get_unchecked_e6325ad374eff861: /* @__PURE__ */ __name(function(arg0, arg1) {
      const ret = arg0[arg1 >>> 0];
      return ret;
    }, "__wbg_get_unchecked_e6325ad374eff861"),
    __wbg_get_with_ref_key_fc601247060b7204: /* @__PURE__ */ __name(function(arg0, arg1) {
      const ret = arg0[arg1];
      return ret;
    }, "__wbg_get_with_ref_key_fc601247060b7204"),
    __wbg_instanceof_ArrayBuffer_12cdaa4161423e6b: /* @__PURE__ */ __name(function(arg0) {
      let result;
      try {
        result = arg0 instanceof ArrayBuffer;
      } catch (_) {
        result = false;
      }
      const ret = result;
      return ret;
    }, "__wbg_instanceof_ArrayBuffer_12cdaa4161423e6b"),
    __wbg_instanceof_Map_0b4fc8b62e73f163: /* @__PURE__ */ __name(function(arg0) {
      let result;
      try {
        result = arg0 instanceof Map;
      } catch (_) {
        result = false;
      }
      const ret = result;
      return ret;
    }, "__wbg_instanceof_Map_0b4fc8b62e73f163"),
    __wbg_instanceof_Promise_59148c6049d0e3a0: /* @__PURE__ */ __name(function(arg0) {
      let result;
      try {
        result = arg0 instanceof Promise;
      } catch (_) {
        result = false;
      }
      const ret = result;
      return ret;
    }, "__wbg_instanceof_Promise_59148c6049d0e3a0"),
    __wbg_instanceof_Uint8Array_d7aeb0dcb3108fea: /* @__PURE__ */ __name(function(arg0) {
      let result;
      try {
        result = arg0 instanceof Uint8Array;
      } catch (_) {
        result = false;
      }
      const ret = result;
      return ret;
    }, "__wbg_instanceof_Uint8Array_d7aeb0dcb3108fea"),
    __wbg_isArray_bcf1376d0d732d08: /* @__PURE__ */ __name(function(arg0) {
      const ret = Array.isArray(arg0);
      return ret;
    }, "__wbg_isArray_bcf1376d0d732d08"),
    __wbg_isSafeInteger_1a35ba4d31e71d38: /* @__PURE__ */ __name(function(arg0) {
      const ret = Number.isSafeInteger(arg0);
      return ret;
    }, "__wbg_isSafeInteger_1a35ba4d31e71d38"),
    __wbg_iterator_e4c5e8f68ada7b58: /* @__PURE__ */ __name(function() {
      const ret = Symbol.iterator;
      return ret;
    }, "__wbg_iterator_e4c5e8f68ada7b58"),
    __wbg_length_186163212ffe79c3: /* @__PURE__ */ __name(function(arg0) {
      const ret = arg0.length;
      return ret;
    }, "__wbg_length_186163212ffe79c3"),
    __wbg_length_b03a0fabb109b1e9: /* @__PURE__ */ __name(function(arg0) {
      const ret = arg0.length;
      return ret;
    }, "__wbg_length_b03a0fabb109b1e9"),
    __wbg_new_13de428334042d26: /* @__PURE__ */ __name(function(arg0) {
      const ret = new Uint8Array(arg0);
      return ret;
    }, "__wbg_new_13de428334042d26"),
    __wbg_new_37eb45aaf5eeb820: /* @__PURE__ */ __name(function() {
      const ret = new Array();
      return ret;
    }, "__wbg_new_37eb45aaf5eeb820"),
    __wbg_new_7075786089b89c5e: /* @__PURE__ */ __name(function() {
      const ret = /* @__PURE__ */ new Map();
      return ret;
    }, "__wbg_new_7075786089b89c5e"),
    __wbg_new_787b9fb330d55d78: /* @__PURE__ */ __name(function(arg0, arg1) {
      const ret = new Error(getStringFromWasm0(arg0, arg1));
      return ret;
    }, "__wbg_new_787b9fb330d55d78"),
    __wbg_new_cd4348290afae586: /* @__PURE__ */ __name(function() {
      const ret = new Object();
      return ret;
    }, "__wbg_new_cd4348290afae586"),
    __wbg_new_from_slice_b8daf545a41c6aa0: /* @__PURE__ */ __name(function(arg0, arg1) {
      const ret = new Uint8Array(getArrayU8FromWasm0(arg0, arg1));
      return ret;
    }, "__wbg_new_from_slice_b8daf545a41c6aa0"),
    __wbg_new_typed_e09da9dae6ee5935: /* @__PURE__ */ __name(function(arg0, arg1) {
      try {
        var state0 = { a: arg0, b: arg1 };
        var cb0 = /* @__PURE__ */ __name((arg02, arg12) => {
          const a = state0.a;
          state0.a = 0;
          try {
            return wasm_bindgen__convert__closures_____invoke__hb98d63cc49481475(a, state0.b, arg02, arg12);
          } finally {
            state0.a = a;
          }
        }, "cb0");
        const ret = new Promise(cb0);
        return ret;
      } finally {
        state0.a = 0;
      }
    }, "__wbg_new_typed_e09da9dae6ee5935"),
    __wbg_next_178c1651c11432b3: /* @__PURE__ */ __name(function(arg0) {
      const ret = arg0.next;
      return ret;
    }, "__wbg_next_178c1651c11432b3"),
    __wbg_next_af5ac6a08bb0a717: /* @__PURE__ */ __name(function() {
      return handleError(function(arg0) {
        const ret = arg0.next();
        return ret;
      }, arguments);
    }, "__wbg_next_af5ac6a08bb0a717"),
    __wbg_prototypesetcall_13162965d1fe7aa3: /* @__PURE__ */ __name(function(arg0, arg1, arg2) {
      Uint8Array.prototype.set.call(getArrayU8FromWasm0(arg0, arg1), arg2);
    }, "__wbg_prototypesetcall_13162965d1fe7aa3"),
    __wbg_queueMicrotask_1e8503a8a690f0a3: /* @__PURE__ */ __name(function(arg0) {
      const ret = arg0.queueMicrotask;
      return ret;
    }, "__wbg_queueMicrotask_1e8503a8a690f0a3"),
    __wbg_queueMicrotask_4a1a4d8dd332373b: /* @__PURE__ */ __name(function(arg0) {
      queueMicrotask(arg0);
    }, "__wbg_queueMicrotask_4a1a4d8dd332373b"),
    __wbg_resolve_dbf78ab4942478b0: /* @__PURE__ */ __name(function(arg0) {
      const ret = Promise.resolve(arg0);
      return ret;
    }, "__wbg_resolve_dbf78ab4942478b0"),
    __wbg_set_2793479888329cb6: /* @__PURE__ */ __name(function() {
      return handleError(function(arg0, arg1, arg2) {
        const ret = Reflect.set(arg0, arg1, arg2);
        return ret;
      }, arguments);
    }, "__wbg_set_2793479888329cb6"),
    __wbg_set_8282f7e0d2d01336: /* @__PURE__ */ __name(function(arg0, arg1, arg2) {
      const ret = arg0.set(arg1, arg2);
      return ret;
    }, "__wbg_set_8282f7e0d2d01336"),
    __wbg_set_d2d33b52458e984a: /* @__PURE__ */ __name(function(arg0, arg1, arg2) {
      arg0[arg1 >>> 0] = arg2;
    }, "__wbg_set_d2d33b52458e984a"),
    __wbg_set_e4b9a833d288759a: /* @__PURE__ */ __name(function(arg0, arg1, arg2) {
      arg0[arg1] = arg2;
    }, "__wbg_set_e4b9a833d288759a"),
    __wbg_static_accessor_GLOBAL_THIS_003ee833af9699fc: /* @__PURE__ */ __name(function() {
      const ret = typeof globalThis === "undefined" ? void 0 : globalThis;
      return isLikeNone(ret) ? 0 : addToExternrefTable0(ret);
    }, "__wbg_static_accessor_GLOBAL_THIS_003ee833af9699fc"),
    __wbg_static_accessor_GLOBAL_e4293fb22cbe77da: /* @__PURE__ */ __name(function() {
      const ret = typeof global === "undefined" ? void 0 : global;
      return isLikeNone(ret) ? 0 : addToExternrefTable0(ret);
    }, "__wbg_static_accessor_GLOBAL_e4293fb22cbe77da"),
    __wbg_static_accessor_SELF_53bb20457401453d: /* @__PURE__ */ __name(function() {
      const ret = typeof self === "undefined" ? void 0 : self;
      return isLikeNone(ret) ? 0 : addToExternrefTable0(ret);
    }, "__wbg_static_accessor_SELF_53bb20457401453d"),
    __wbg_static_accessor_WINDOW_b5e0810bfecb7feb: /* @__PURE__ */ __name(function() {
      const ret = typeof window === "undefined" ? void 0 : window;
      return isLikeNone(ret) ? 0 : addToExternrefTable0(ret);
    }, "__wbg_static_accessor_WINDOW_b5e0810bfecb7feb"),
    __wbg_then_656f253a5dd7d8ea: /* @__PURE__ */ __name(function(arg0, arg1, arg2) {
      const ret = arg0.then(arg1, arg2);
      return ret;
    }, "__wbg_then_656f253a5dd7d8ea"),
    __wbg_then_e3f7f2d365708be8: /* @__PURE__ */ __name(function(arg0, arg1) {
      const ret = arg0.then(arg1);
      return ret;
    }, "__wbg_then_e3f7f2d365708be8"),
    __wbg_value_e0f328965e184931: /* @__PURE__ */ __name(function(arg0) {
      const ret = arg0.value;
      return ret;
    }, "__wbg_value_e0f328965e184931"),
    __wbindgen_generic_0000000000000001: /* @__PURE__ */ __name(function(arg0, arg1) {
      const ret = makeMutClosure(arg0, arg1, wasm_bindgen__convert__closures_____invoke__h60702a48838d1764);
      return ret;
    }, "__wbindgen_generic_0000000000000001"),
    __wbindgen_generic_0000000000000002: /* @__PURE__ */ __name(function(arg0) {
      const ret = arg0;
      return ret;
    }, "__wbindgen_generic_0000000000000002"),
    __wbindgen_generic_0000000000000003: /* @__PURE__ */ __name(function(arg0) {
      const ret = arg0;
      return ret;
    }, "__wbindgen_generic_0000000000000003"),
    __wbindgen_generic_0000000000000004: /* @__PURE__ */ __name(function(arg0, arg1) {
      const ret = getStringFromWasm0(arg0, arg1);
      return ret;
    }, "__wbindgen_generic_0000000000000004"),
    __wbindgen_generic_0000000000000005: /* @__PURE__ */ __name(function(arg0) {
      const ret = BigInt.asUintN(64, arg0);
      return ret;
    }, "__wbindgen_generic_0000000000000005"),
    __wbindgen_init_externref_table: /* @__PURE__ */ __name(function() {
      const table = wasm.__wbindgen_externrefs;
      table.set(0, void 0);
      table.set(1024, void 0);
      table.set(1025, null);
      table.set(1026, true);
      table.set(1027, false);
    }, "__wbindgen_init_externref_table")
  };
  return {
    __proto__: null,
    "./sextant_wasm_bg.js": import0
  };
}
__name(__wbg_get_imports, "__wbg_get_imports");
function wasm_bindgen__convert__closures_____invoke__h60702a48838d1764(arg0, arg1, arg2) {
  const ret = wasm.wasm_bindgen__convert__closures_____invoke__h60702a48838d1764(arg0, arg1, arg2);
  if (ret[1]) {
    throw takeFromExternrefTable0(ret[0]);
  }
}
__name(wasm_bindgen__convert__closures_____invoke__h60702a48838d1764, "wasm_bindgen__convert__closures_____invoke__h60702a48838d1764");
function wasm_bindgen__convert__closures_____invoke__hb98d63cc49481475(arg0, arg1, arg2, arg3) {
  wasm.wasm_bindgen__convert__closures_____invoke__hb98d63cc49481475(arg0, arg1, arg2, arg3);
}
__name(wasm_bindgen__convert__closures_____invoke__hb98d63cc49481475, "wasm_bindgen__convert__closures_____invoke__hb98d63cc49481475");
var EngineFinalization = typeof FinalizationRegistry === "undefined" ? { register: /* @__PURE__ */ __name(() => {
}, "register"), unregister: /* @__PURE__ */ __name(() => {
}, "unregister") } : new FinalizationRegistry((ptr) => wasm.__wbg_engine_free(ptr, 1));
function addToExternrefTable0(obj) {
  const idx = wasm.__externref_table_alloc_command_export();
  wasm.__wbindgen_externrefs.set(idx, obj);
  return idx;
}
__name(addToExternrefTable0, "addToExternrefTable0");
var CLOSURE_DTORS = typeof FinalizationRegistry === "undefined" ? { register: /* @__PURE__ */ __name(() => {
}, "register"), unregister: /* @__PURE__ */ __name(() => {
}, "unregister") } : new FinalizationRegistry((state) => wasm.__wbindgen_destroy_closure_command_export(state.a, state.b));
function debugString(val) {
  switch (typeof val) {
    // primitive types
    case "number":
    case "boolean":
    case "undefined":
      return `${val}`;
    case "string":
      return JSON.stringify(val);
    case "bigint":
      return `${val}n`;
    case "symbol":
      return val.description !== void 0 ? `Symbol(${val.description})` : "Symbol";
    case "function":
      return typeof val.name === "string" && val.name !== "" ? `Function(${val.name})` : "Function";
    case "object": {
      if (val === null) {
        return "null";
      }
      if (Array.isArray(val)) {
        return "[" + Array.from(val, debugString).join(", ") + "]";
      }
      if (val instanceof Error) {
        return `${val.name}: ${val.message}
${val.stack}`;
      }
      const toStringOutput = toString.call(val);
      const className = /\[object ([^\]]+)\]/.exec(toStringOutput)?.[1];
      if (className === void 0) {
        return toStringOutput;
      }
      if (className === "Object") {
        try {
          return "Object(" + JSON.stringify(val) + ")";
        } catch (_) {
          return "Object";
        }
      }
      return className;
    }
  }
}
__name(debugString, "debugString");
function getArrayF32FromWasm0(ptr, len) {
  ptr = ptr >>> 0;
  return getFloat32ArrayMemory0().subarray(ptr / 4, ptr / 4 + len);
}
__name(getArrayF32FromWasm0, "getArrayF32FromWasm0");
function getArrayU32FromWasm0(ptr, len) {
  ptr = ptr >>> 0;
  return getUint32ArrayMemory0().subarray(ptr / 4, ptr / 4 + len);
}
__name(getArrayU32FromWasm0, "getArrayU32FromWasm0");
function getArrayU8FromWasm0(ptr, len) {
  ptr = ptr >>> 0;
  return getUint8ArrayMemory0().subarray(ptr / 1, ptr / 1 + len);
}
__name(getArrayU8FromWasm0, "getArrayU8FromWasm0");
var cachedDataViewMemory0 = null;
function getDataViewMemory0() {
  if (cachedDataViewMemory0 === null || cachedDataViewMemory0.buffer.detached === true || cachedDataViewMemory0.buffer.detached === void 0 && cachedDataViewMemory0.buffer !== wasm.memory.buffer) {
    cachedDataViewMemory0 = new DataView(wasm.memory.buffer);
  }
  return cachedDataViewMemory0;
}
__name(getDataViewMemory0, "getDataViewMemory0");
var cachedFloat32ArrayMemory0 = null;
function getFloat32ArrayMemory0() {
  if (cachedFloat32ArrayMemory0 === null || cachedFloat32ArrayMemory0.byteLength === 0) {
    cachedFloat32ArrayMemory0 = new Float32Array(wasm.memory.buffer);
  }
  return cachedFloat32ArrayMemory0;
}
__name(getFloat32ArrayMemory0, "getFloat32ArrayMemory0");
function getStringFromWasm0(ptr, len) {
  ptr = ptr >>> 0;
  return decodeText(getUint8ArrayMemory0().subarray(ptr, ptr + len));
}
__name(getStringFromWasm0, "getStringFromWasm0");
var cachedUint32ArrayMemory0 = null;
function getUint32ArrayMemory0() {
  if (cachedUint32ArrayMemory0 === null || cachedUint32ArrayMemory0.byteLength === 0) {
    cachedUint32ArrayMemory0 = new Uint32Array(wasm.memory.buffer);
  }
  return cachedUint32ArrayMemory0;
}
__name(getUint32ArrayMemory0, "getUint32ArrayMemory0");
var cachedUint8ArrayMemory0 = null;
function getUint8ArrayMemory0() {
  if (cachedUint8ArrayMemory0 === null || cachedUint8ArrayMemory0.byteLength === 0) {
    cachedUint8ArrayMemory0 = new Uint8Array(wasm.memory.buffer);
  }
  return cachedUint8ArrayMemory0;
}
__name(getUint8ArrayMemory0, "getUint8ArrayMemory0");
function handleError(f, args) {
  try {
    return f.apply(this, args);
  } catch (e) {
    const idx = addToExternrefTable0(e);
    wasm.__wbindgen_exn_store_command_export(idx);
  }
}
__name(handleError, "handleError");
function isLikeNone(x) {
  return x === void 0 || x === null;
}
__name(isLikeNone, "isLikeNone");
function makeMutClosure(arg0, arg1, f) {
  const state = { a: arg0, b: arg1, cnt: 1 };
  const real = /* @__PURE__ */ __name((...args) => {
    state.cnt++;
    const a = state.a;
    state.a = 0;
    try {
      return f(a, state.b, ...args);
    } finally {
      state.a = a;
      real._wbg_cb_unref();
    }
  }, "real");
  real._wbg_cb_unref = () => {
    if (--state.cnt === 0) {
      wasm.__wbindgen_destroy_closure_command_export(state.a, state.b);
      state.a = 0;
      CLOSURE_DTORS.unregister(state);
    }
  };
  CLOSURE_DTORS.register(real, state, state);
  return real;
}
__name(makeMutClosure, "makeMutClosure");
function passArray8ToWasm0(arg, malloc) {
  const ptr = malloc(arg.length * 1, 1) >>> 0;
  getUint8ArrayMemory0().set(arg, ptr / 1);
  WASM_VECTOR_LEN = arg.length;
  return ptr;
}
__name(passArray8ToWasm0, "passArray8ToWasm0");
function passStringToWasm0(arg, malloc, realloc) {
  if (realloc === void 0) {
    const buf = cachedTextEncoder.encode(arg);
    const ptr2 = malloc(buf.length, 1) >>> 0;
    getUint8ArrayMemory0().subarray(ptr2, ptr2 + buf.length).set(buf);
    WASM_VECTOR_LEN = buf.length;
    return ptr2;
  }
  let len = arg.length;
  let ptr = malloc(len, 1) >>> 0;
  const mem = getUint8ArrayMemory0();
  let offset = 0;
  for (; offset < len; offset++) {
    const code = arg.charCodeAt(offset);
    if (code > 127) break;
    mem[ptr + offset] = code;
  }
  if (offset !== len) {
    if (offset !== 0) {
      arg = arg.slice(offset);
    }
    ptr = realloc(ptr, len, len = offset + arg.length * 3, 1) >>> 0;
    const view = getUint8ArrayMemory0().subarray(ptr + offset, ptr + len);
    const ret = cachedTextEncoder.encodeInto(arg, view);
    offset += ret.written;
    ptr = realloc(ptr, len, offset, 1) >>> 0;
  }
  WASM_VECTOR_LEN = offset;
  return ptr;
}
__name(passStringToWasm0, "passStringToWasm0");
function takeFromExternrefTable0(idx) {
  const value = wasm.__wbindgen_externrefs.get(idx);
  wasm.__externref_table_dealloc_command_export(idx);
  return value;
}
__name(takeFromExternrefTable0, "takeFromExternrefTable0");
var cachedTextDecoder = new TextDecoder("utf-8", { ignoreBOM: true });
cachedTextDecoder.decode();
var MAX_SAFARI_DECODE_BYTES = 2146435072;
var numBytesDecoded = 0;
function decodeText(bytes) {
  numBytesDecoded += bytes.length;
  if (numBytesDecoded >= MAX_SAFARI_DECODE_BYTES) {
    cachedTextDecoder = new TextDecoder("utf-8", { ignoreBOM: true });
    cachedTextDecoder.decode();
    numBytesDecoded = bytes.length;
  }
  return cachedTextDecoder.decode(bytes);
}
__name(decodeText, "decodeText");
var cachedTextEncoder = new TextEncoder();
if (!("encodeInto" in cachedTextEncoder)) {
  cachedTextEncoder.encodeInto = function(arg, view) {
    const buf = cachedTextEncoder.encode(arg);
    view.set(buf);
    return {
      read: arg.length,
      written: buf.length
    };
  };
}
var WASM_VECTOR_LEN = 0;
var wasmModule;
var wasmInstance;
var wasm;
function __wbg_finalize_init(instance, module) {
  wasmInstance = instance;
  wasm = instance.exports;
  wasmModule = module;
  cachedDataViewMemory0 = null;
  cachedFloat32ArrayMemory0 = null;
  cachedUint32ArrayMemory0 = null;
  cachedUint8ArrayMemory0 = null;
  wasm.__wbindgen_start();
  return wasm;
}
__name(__wbg_finalize_init, "__wbg_finalize_init");
async function __wbg_load(module, imports) {
  if (typeof Response === "function" && module instanceof Response) {
    if (!module.ok) {
      throw new Error(`failed to fetch Wasm: ${module.status} ${module.statusText} fetching '${module.url}'`);
    }
    if (typeof WebAssembly.instantiateStreaming === "function") {
      try {
        return await WebAssembly.instantiateStreaming(module, imports);
      } catch (e) {
        const validResponse = expectedResponseType(module.type);
        if (validResponse && module.headers.get("Content-Type") !== "application/wasm") {
          console.warn("`WebAssembly.instantiateStreaming` failed because your server does not serve Wasm with `application/wasm` MIME type. Falling back to `WebAssembly.instantiate` which is slower. Original error:\n", e);
        } else {
          throw e;
        }
      }
    }
    const bytes = await module.arrayBuffer();
    return await WebAssembly.instantiate(bytes, imports);
  } else {
    const instance = await WebAssembly.instantiate(module, imports);
    if (instance instanceof WebAssembly.Instance) {
      return { instance, module };
    } else {
      return instance;
    }
  }
  function expectedResponseType(type) {
    switch (type) {
      case "basic":
      case "cors":
      case "default":
        return true;
    }
    return false;
  }
  __name(expectedResponseType, "expectedResponseType");
}
__name(__wbg_load, "__wbg_load");
function initSync(module) {
  if (wasm !== void 0) return wasm;
  if (module !== void 0) {
    if (Object.getPrototypeOf(module) === Object.prototype) {
      ({ module } = module);
    } else {
      console.warn("using deprecated parameters for `initSync()`; pass a single object instead");
    }
  }
  const imports = __wbg_get_imports();
  if (!(module instanceof WebAssembly.Module)) {
    module = new WebAssembly.Module(module);
  }
  const instance = new WebAssembly.Instance(module, imports);
  return __wbg_finalize_init(instance, module);
}
__name(initSync, "initSync");
var __wbg_init_promise;
async function __wbg_init(module_or_path) {
  if (wasm !== void 0) return wasm;
  if (__wbg_init_promise === void 0) {
    __wbg_init_promise = __wbg_init_once(module_or_path);
    __wbg_init_promise.catch(() => {
      __wbg_init_promise = void 0;
    });
  }
  return __wbg_init_promise;
}
__name(__wbg_init, "__wbg_init");
async function __wbg_init_once(module_or_path) {
  if (module_or_path !== void 0) {
    if (Object.getPrototypeOf(module_or_path) === Object.prototype) {
      ({ module_or_path } = module_or_path);
    } else {
      console.warn("using deprecated parameters for the initialization function; pass a single object instead");
    }
  }
  if (module_or_path === void 0) {
    module_or_path = new URL("sextant_wasm_bg.wasm", import.meta.url);
  }
  const imports = __wbg_get_imports();
  if (typeof module_or_path === "string" || typeof Request === "function" && module_or_path instanceof Request || typeof URL === "function" && module_or_path instanceof URL) {
    module_or_path = fetch(module_or_path);
  }
  const { instance, module } = await __wbg_load(await module_or_path, imports);
  return __wbg_finalize_init(instance, module);
}
__name(__wbg_init_once, "__wbg_init_once");

// ../../pkg/core.js
var SextantError = class extends Error {
  static {
    __name(this, "SextantError");
  }
  constructor(code, message, details = {}) {
    super(message);
    this.name = "SextantError";
    this.code = code;
    Object.assign(this, details);
  }
};
var REFUSAL = "I could not find anything in the documents that answers this question.";
function rethrow(error) {
  if (error instanceof Error) {
    if (!error.code) error.code = "INTERNAL";
    return error;
  }
  return new SextantError("INTERNAL", String(error));
}
__name(rethrow, "rethrow");
function isUrlLike(value) {
  return typeof value === "string" || value instanceof URL;
}
__name(isUrlLike, "isUrlLike");
async function toBytes(wasm2, value, file, onProgress) {
  if (value == null) return void 0;
  if (value instanceof Uint8Array) return value;
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  if (isUrlLike(value)) {
    try {
      return await wasm2.fetchBytes(String(value), file, onProgress);
    } catch (e) {
      throw rethrow(e);
    }
  }
  throw new SextantError("BAD_ARGUMENT", `${file} must be a URL, an ArrayBuffer or a Uint8Array`);
}
__name(toBytes, "toBytes");
function retryAfterMs(header, now = Date.now()) {
  if (!header) return null;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1e3);
  const date = Date.parse(header);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}
__name(retryAfterMs, "retryAfterMs");
function backoffMs(attempt, random = Math.random) {
  return Math.min(8e3, 500 * 2 ** (attempt - 1)) * random();
}
__name(backoffMs, "backoffMs");
function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(signal.reason);
    }, { once: true });
  });
}
__name(sleep, "sleep");
function abortError(signal) {
  const reason = signal?.reason;
  if (reason?.name === "TimeoutError") {
    return new SextantError("LLM_TIMEOUT", "the LLM did not answer in time; raise timeoutMs or try again");
  }
  return new SextantError("ABORTED", "the request was aborted");
}
__name(abortError, "abortError");
function chatUrl(baseUrl) {
  let url;
  try {
    url = new URL(String(baseUrl));
  } catch {
    throw new SextantError("LLM_BAD_URL", `llm.baseUrl ${JSON.stringify(String(baseUrl))} is not a URL; use e.g. https://api.openai.com/v1`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw new SextantError("LLM_BAD_URL", `llm.baseUrl must be http(s), not ${url.protocol}`);
  }
  return url.href.replace(/\/+$/, "") + "/chat/completions";
}
__name(chatUrl, "chatUrl");
async function readChatStream(body, onDelta) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let usage = null;
  let finishReason = null;
  let malformed = 0;
  let done = false;
  const handle = /* @__PURE__ */ __name((line) => {
    if (!line.startsWith("data:")) return;
    const data = line.slice(5).trim();
    if (data === "[DONE]") {
      done = true;
      return;
    }
    let event;
    try {
      event = JSON.parse(data);
    } catch {
      malformed += 1;
      return;
    }
    if (event?.usage) usage = event.usage;
    const choice = event?.choices?.[0];
    if (choice?.finish_reason) finishReason = choice.finish_reason;
    const delta = choice?.delta?.content;
    if (typeof delta === "string" && delta.length > 0) onDelta(delta);
  }, "handle");
  while (!done) {
    const { value, done: ended } = await reader.read();
    if (ended) break;
    buffer += decoder.decode(value, { stream: true });
    let newline;
    while ((newline = buffer.search(/\r?\n/)) >= 0) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(buffer[newline] === "\r" ? newline + 2 : newline + 1);
      handle(line);
      if (done) break;
    }
  }
  if (!done && buffer.trim()) handle(buffer.trim());
  if (done) await reader.cancel().catch(() => {
  });
  return { usage, finishReason, malformed };
}
__name(readChatStream, "readChatStream");
async function errorText(response) {
  try {
    const text = await response.text();
    const parsed = JSON.parse(text);
    return parsed?.error?.message ?? text.slice(0, 300);
  } catch {
    return "";
  }
}
__name(errorText, "errorText");
async function postWithRetries(url, init, { maxTries, signal, fetchImpl, random, onRetry }) {
  for (let attempt = 1; ; attempt++) {
    let response;
    try {
      response = await fetchImpl(url, { ...init, signal });
    } catch (e) {
      if (signal?.aborted) throw abortError(signal);
      throw new SextantError("LLM_UNREACHABLE", `could not reach the LLM at ${new URL(url).origin} (${e?.message ?? e}); check llm.baseUrl and the network`);
    }
    if (response.ok) return response;
    const status = response.status;
    if (status === 401 || status === 403) {
      const detail = await errorText(response);
      throw new SextantError("LLM_AUTH", `the LLM endpoint refused the request (${status}${detail ? `: ${detail}` : ""}); check llm.apiKey and that the key may use llm.model`, { status });
    }
    const retryable = status === 429 || status >= 500;
    if (!retryable || attempt >= maxTries) {
      const detail = await errorText(response);
      const code = retryable ? "LLM_UNAVAILABLE" : "LLM_HTTP";
      const hint = retryable ? `after ${attempt} tries; try again later` : "check llm.model and the request options";
      throw new SextantError(code, `the LLM endpoint answered ${status}${detail ? ` (${detail})` : ""} ${hint}`, { status });
    }
    await response.body?.cancel().catch(() => {
    });
    const wait = retryAfterMs(response.headers.get("retry-after")) ?? backoffMs(attempt, random);
    onRetry?.({ attempt, status, waitMs: Math.min(wait, 3e4) });
    try {
      await sleep(Math.min(wait, 3e4), signal);
    } catch {
      throw abortError(signal);
    }
  }
}
__name(postWithRetries, "postWithRetries");
function makeApi(wasm2, initialise) {
  let pending = null;
  let initialised = false;
  let exports = null;
  const ready2 = /* @__PURE__ */ __name(() => {
    pending ??= Promise.resolve().then(initialise).then((instanceExports) => {
      exports = instanceExports ?? null;
      initialised = true;
    });
    return pending;
  }, "ready");
  const memoryBytes2 = /* @__PURE__ */ __name(() => exports?.memory?.buffer?.byteLength ?? null, "memoryBytes");
  const requireReady = /* @__PURE__ */ __name(() => {
    if (!initialised) {
      throw new SextantError("NOT_READY", "the WebAssembly module is not loaded yet; await ready() or Sextant.load() first");
    }
  }, "requireReady");
  const verifyCitations3 = /* @__PURE__ */ __name((answer, sent) => {
    requireReady();
    try {
      return wasm2.verifyCitations(String(answer), sent);
    } catch (e) {
      throw rethrow(e);
    }
  }, "verifyCitations");
  class Sextant2 {
    static {
      __name(this, "Sextant");
    }
    #engine;
    constructor(engine2) {
      this.#engine = engine2;
    }
    /**
     * Loads a bundle and (optionally) the model that queries it. Each of bundle, model and
     * tokenizer is a URL or bytes. onProgress({file, loaded, total}) reports downloads.
     */
    static async load({ bundle, model, tokenizer, onProgress } = {}) {
      if (bundle == null) throw new SextantError("BAD_ARGUMENT", "load() needs a bundle (URL or bytes)");
      await ready2();
      if (model == null !== (tokenizer == null)) {
        throw new SextantError("BAD_ARGUMENT", "pass both model and tokenizer, or neither (keyword search only)");
      }
      const [bundleBytes, tokenizerBytes, modelBytes] = [
        await toBytes(wasm2, bundle, "bundle", onProgress),
        await toBytes(wasm2, tokenizer, "tokenizer", onProgress),
        await toBytes(wasm2, model, "model", onProgress)
      ];
      try {
        return new Sextant2(new wasm2.Engine(bundleBytes, modelBytes, tokenizerBytes));
      } catch (e) {
        throw rethrow(e);
      }
    }
    /** search(query, {k, mode, threshold, minSimilarity, perDocument}) → {results, timings, vector_method}. */
    search(query2, options) {
      try {
        return this.#engine.search(String(query2), options);
      } catch (e) {
        throw rethrow(e);
      }
    }
    /** frame(results, {tokenBudget}) → {context, included, omitted, tokens, budget, systemPrompt}. */
    frame(results, options) {
      try {
        return this.#engine.frame(results, options);
      } catch (e) {
        throw rethrow(e);
      }
    }
    /** context(query, {tokenBudget, k, mode, threshold, minSimilarity}) → framed context plus the results. */
    context(query2, { tokenBudget = 1500, ...searchOptions } = {}) {
      const { results } = this.search(query2, searchOptions);
      return { ...this.frame(results, { tokenBudget }), results };
    }
    manifest() {
      return this.#engine.manifest();
    }
    embed(text) {
      try {
        return this.#engine.embed(String(text));
      } catch (e) {
        throw rethrow(e);
      }
    }
    tokenIds(text) {
      try {
        return this.#engine.tokenIds(String(text));
      } catch (e) {
        throw rethrow(e);
      }
    }
    /**
     * Answers a question from the documents with the LLM the caller configures.
     * Returns { answer, citations, unknownCitations, grounded, refused, chunks, usage }.
     */
    async ask(question, {
      llm,
      k = 6,
      tokenBudget = 1500,
      mode: mode2 = "hybrid",
      threshold,
      minSimilarity = 0.3,
      signal,
      timeoutMs = 6e4,
      onToken,
      onRetry,
      maxTries = 3,
      temperature = 0,
      fetch: fetchImpl = globalThis.fetch,
      random = Math.random
    } = {}) {
      if (!llm || !llm.baseUrl || !llm.model) {
        throw new SextantError("BAD_ARGUMENT", "ask() needs llm: { baseUrl, model, apiKey? }");
      }
      const url = chatUrl(llm.baseUrl);
      const framed = this.context(question, { tokenBudget, k, mode: mode2, threshold, minSimilarity });
      const sent = framed.results.filter((r) => framed.included.includes(r.chunk_id));
      if (sent.length === 0) {
        return { answer: REFUSAL, citations: [], unknownCitations: [], grounded: false, refused: true, chunks: [], usage: null };
      }
      const headers = { "content-type": "application/json", accept: "text/event-stream", ...llm.headers ?? {} };
      if (llm.apiKey) headers.authorization = `Bearer ${llm.apiKey}`;
      const body = JSON.stringify({
        model: llm.model,
        stream: true,
        stream_options: { include_usage: true },
        temperature,
        messages: [
          {
            role: "system",
            content: `You answer questions using only the retrieved documents below. ${framed.systemPrompt} If the documents do not contain the answer, say so.

${framed.context}`
          },
          { role: "user", content: String(question) }
        ]
      });
      const signals = [signal, timeoutMs ? AbortSignal.timeout(timeoutMs) : null].filter(Boolean);
      const combined = signals.length > 1 ? AbortSignal.any(signals) : signals[0];
      const response = await postWithRetries(url, { method: "POST", headers, body }, {
        maxTries,
        signal: combined,
        fetchImpl,
        random,
        onRetry
      });
      if (!response.body) throw new SextantError("LLM_BAD_RESPONSE", "the LLM answered without a body");
      let answer = "";
      let stream;
      try {
        stream = await readChatStream(response.body, (delta) => {
          answer += delta;
          onToken?.(delta);
        });
      } catch (e) {
        if (combined?.aborted) throw abortError(combined);
        throw new SextantError("LLM_BAD_RESPONSE", `the LLM stream broke off: ${e?.message ?? e}`);
      }
      const report = verifyCitations3(answer, sent.map((r) => r.chunk_id));
      const byId = new Map(sent.map((r) => [r.chunk_id, r]));
      const citations = report.citations.map((c) => ({
        ...c,
        url: byId.get(c.chunk_id)?.url ?? null,
        title: byId.get(c.chunk_id)?.title ?? null
      }));
      return {
        answer,
        citations,
        unknownCitations: report.unknown,
        grounded: report.grounded,
        refused: false,
        chunks: sent,
        usage: stream.usage,
        malformedEvents: stream.malformed,
        finishReason: stream.finishReason
      };
    }
    /** Releases the WebAssembly memory of this engine. */
    free() {
      this.#engine?.free();
      this.#engine = void 0;
    }
  }
  const systemPrompt3 = /* @__PURE__ */ __name(() => {
    requireReady();
    return wasm2.systemPrompt();
  }, "systemPrompt");
  return { Sextant: Sextant2, SextantError, verifyCitations: verifyCitations3, systemPrompt: systemPrompt3, ready: ready2, memoryBytes: memoryBytes2 };
}
__name(makeApi, "makeApi");

// ../../pkg/workerd.js
var api = makeApi(sextant_wasm_exports, () => initSync({ module: wasmModule2 }));
var { Sextant, SextantError: SextantError2, verifyCitations: verifyCitations2, systemPrompt: systemPrompt2, ready, memoryBytes } = api;

// src/index.js
var MAX_QUERY = 512;
var API = /* @__PURE__ */ new Set(["/search", "/context", "/ask", "/healthz"]);
var METHODS = { "/search": "GET", "/context": "GET", "/ask": "POST", "/healthz": "GET" };
var engine = null;
var loadedAt = null;
var loadMs = null;
var HttpError = class extends Error {
  static {
    __name(this, "HttpError");
  }
  constructor(status, code, message, headers = {}) {
    super(message);
    this.status = status;
    this.code = code;
    this.headers = headers;
  }
};
function json(body, status = 200, headers = {}) {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json; charset=utf-8", ...headers } });
}
__name(json, "json");
function errorResponse(e) {
  if (e instanceof HttpError) return json({ error: { code: e.code, message: e.message } }, e.status, e.headers);
  const code = e?.code ?? "INTERNAL";
  const status = code === "BAD_ARGUMENT" ? 400 : code.startsWith("LLM_") ? 502 : 500;
  return json({ error: { code, message: String(e?.message ?? e) } }, status);
}
__name(errorResponse, "errorResponse");
async function siteManifest(env) {
  const response = await env.ASSETS.fetch(new Request("http://assets/sextant/sextant.json"));
  if (!response.ok) throw new HttpError(503, "NOT_BUILT", "the search assets are missing: run `make worker` (sextant build --site) before deploying");
  return response.json();
}
__name(siteManifest, "siteManifest");
async function asset(env, name) {
  const response = await env.ASSETS.fetch(new Request(`http://assets/sextant/${name}`));
  if (!response.ok) throw new HttpError(503, "NOT_BUILT", `asset sextant/${name} is missing (${response.status}); rebuild with \`make worker\``);
  return new Uint8Array(await response.arrayBuffer());
}
__name(asset, "asset");
function getEngine(env) {
  engine ??= (async () => {
    const started = Date.now();
    const manifest = await siteManifest(env);
    const [bundle, model, tokenizer] = await Promise.all([asset(env, manifest.bundle), asset(env, manifest.model), asset(env, manifest.tokenizer)]);
    const sextant = await Sextant.load({ bundle, model, tokenizer });
    loadMs = Date.now() - started;
    loadedAt = (/* @__PURE__ */ new Date()).toISOString();
    return sextant;
  })().catch((e) => {
    engine = null;
    throw e;
  });
  return engine;
}
__name(getEngine, "getEngine");
function query(url) {
  const q = url.searchParams.get("q");
  if (q === null || q.trim() === "") throw new HttpError(400, "MISSING_QUERY", "the query parameter q is missing or empty");
  if (q.length > MAX_QUERY) throw new HttpError(400, "QUERY_TOO_LONG", `q is ${q.length} characters; the limit is ${MAX_QUERY}`);
  return q;
}
__name(query, "query");
function integer(value, name, min, max, fallback) {
  if (value === null || value === void 0) return fallback;
  const n = typeof value === "number" ? value : Number(value);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new HttpError(400, `BAD_${name.toUpperCase()}`, `${name} must be an integer from ${min} to ${max}`);
  }
  return n;
}
__name(integer, "integer");
function mode(value) {
  const m = value ?? "hybrid";
  if (!["hybrid", "dense", "keyword"].includes(m)) throw new HttpError(400, "BAD_MODE", `mode ${JSON.stringify(m)} is not hybrid, dense or keyword`);
  return m;
}
__name(mode, "mode");
function cors(request, env) {
  const origin = request.headers.get("origin");
  const allowed = (env.CORS_ORIGINS ?? "").split(",").map((s) => s.trim()).filter(Boolean);
  if (!origin || !(allowed.includes("*") || allowed.includes(origin))) return {};
  return {
    "access-control-allow-origin": allowed.includes("*") ? "*" : origin,
    "access-control-allow-methods": "GET, POST, OPTIONS",
    "access-control-allow-headers": "authorization, content-type",
    "access-control-max-age": "86400",
    vary: "origin"
  };
}
__name(cors, "cors");
function checkToken(request, env) {
  if (!env.SEXTANT_TOKEN) return;
  const header = request.headers.get("authorization") ?? "";
  const given = header.startsWith("Bearer ") ? header.slice(7) : "";
  const a = new TextEncoder().encode(given);
  const b = new TextEncoder().encode(env.SEXTANT_TOKEN);
  let diff = a.length ^ b.length;
  for (let i = 0; i < Math.max(a.length, b.length); i++) diff |= (a[i] ?? 0) ^ (b[i] ?? 0);
  if (diff !== 0) throw new HttpError(401, "UNAUTHORIZED", "POST /ask needs Authorization: Bearer <SEXTANT_TOKEN>", { "www-authenticate": "Bearer" });
}
__name(checkToken, "checkToken");
async function search(url, env) {
  const q = query(url);
  const k = integer(url.searchParams.get("k"), "k", 1, 50, 10);
  const m = mode(url.searchParams.get("mode"));
  const wasCold = engine === null;
  const sextant = await getEngine(env);
  return json(sextant.search(q, { k, mode: m }), 200, { "x-sextant-cold-start": String(wasCold) });
}
__name(search, "search");
async function context(url, env) {
  const q = query(url);
  const budget = integer(url.searchParams.get("budget"), "budget", 50, 8e3, 1500);
  const sextant = await getEngine(env);
  const framed = sextant.context(q, { tokenBudget: budget });
  return new Response(framed.context, {
    headers: { "content-type": "text/plain; charset=utf-8", "x-sextant-chunks": framed.included.join(" "), "x-sextant-tokens": String(framed.tokens) }
  });
}
__name(context, "context");
async function ask(request, env, ctx) {
  checkToken(request, env);
  let body;
  try {
    body = await request.json();
  } catch {
    throw new HttpError(400, "BAD_JSON", 'the body must be JSON like {"question": "\u2026", "k": 6}');
  }
  if (body === null || typeof body !== "object" || Array.isArray(body)) throw new HttpError(400, "BAD_JSON", "the body must be a JSON object");
  const question = body.question;
  if (typeof question !== "string" || question.trim() === "") throw new HttpError(400, "MISSING_QUESTION", "question must be a non-empty string");
  if (question.length > MAX_QUERY) throw new HttpError(400, "QUERY_TOO_LONG", `question is ${question.length} characters; the limit is ${MAX_QUERY}`);
  const k = integer(body.k, "k", 1, 50, 6);
  if (!env.LLM_BASE_URL || !env.LLM_MODEL) throw new HttpError(503, "LLM_NOT_CONFIGURED", "set LLM_BASE_URL and LLM_MODEL (and the secret LLM_API_KEY) for this Worker");
  const sextant = await getEngine(env);
  const { readable, writable } = new TransformStream();
  const writer = writable.getWriter();
  const encoder = new TextEncoder();
  const send = /* @__PURE__ */ __name((event, data) => writer.write(encoder.encode(`event: ${event}
data: ${JSON.stringify(data)}

`)), "send");
  const run = (async () => {
    try {
      const answer = await sextant.ask(question, {
        llm: { baseUrl: env.LLM_BASE_URL, model: env.LLM_MODEL, apiKey: env.LLM_API_KEY },
        k,
        signal: request.signal,
        onToken: /* @__PURE__ */ __name((text) => send("token", { text }), "onToken")
      });
      await send("done", {
        answer: answer.answer,
        refused: answer.refused,
        grounded: answer.grounded,
        citations: answer.citations,
        unknownCitations: answer.unknownCitations,
        chunks: answer.chunks.map(({ chunk_id, doc_id, title, url, heading_path }) => ({ chunk_id, doc_id, title, url, heading_path })),
        usage: answer.usage
      });
    } catch (e) {
      await send("error", { code: e?.code ?? "INTERNAL", message: String(e?.message ?? e) });
    } finally {
      await writer.close();
    }
  })();
  ctx.waitUntil(run);
  return new Response(readable, { headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" } });
}
__name(ask, "ask");
async function healthz(env) {
  const manifest = await siteManifest(env);
  const sextant = engine ? await engine : null;
  const m = sextant?.manifest();
  return json({
    status: "ok",
    engine: sextant ? "loaded" : "not loaded",
    loaded_at: loadedAt,
    load_ms: loadMs,
    bundle: manifest.bundle,
    pages: manifest.pages,
    chunks: manifest.chunks,
    generator: manifest.generator,
    model: m ? { sha256: m.model.sha256, dims: m.model.dims, pooling: m.model.pooling } : null,
    format: m ? m.format : null,
    wasm_memory_bytes: sextant ? memoryBytes() : null
  });
}
__name(healthz, "healthz");
var index_default = {
  async fetch(request, env, ctx) {
    const url = new URL(request.url);
    const headers = cors(request, env);
    if (!API.has(url.pathname)) {
      if (!env.ASSETS) return new Response("not found", { status: 404 });
      const response2 = await env.ASSETS.fetch(request);
      if (response2.status === 404 && url.pathname.endsWith("/")) return env.ASSETS.fetch(new Request(new URL("index.html", url), request));
      return response2;
    }
    if (request.method === "OPTIONS") return new Response(null, { status: 204, headers });
    let response;
    try {
      const allowed = METHODS[url.pathname];
      if (request.method !== allowed) {
        throw new HttpError(405, "METHOD_NOT_ALLOWED", `${url.pathname} takes ${allowed}, not ${request.method}`, { allow: `${allowed}, OPTIONS` });
      }
      if (url.pathname === "/search") response = await search(url, env);
      else if (url.pathname === "/context") response = await context(url, env);
      else if (url.pathname === "/ask") response = await ask(request, env, ctx);
      else response = await healthz(env);
    } catch (e) {
      response = errorResponse(e);
    }
    for (const [k, v] of Object.entries(headers)) response.headers.set(k, v);
    return response;
  }
};
export {
  index_default as default
};
//# sourceMappingURL=index.js.map
