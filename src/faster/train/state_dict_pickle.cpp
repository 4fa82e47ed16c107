// A pickle machine for state_dicts: the opcodes of protocols 2-5 that torch.save and
// torch::pickle_save use for a dict of tensors, and the callables they name (OrderedDict,
// _rebuild_tensor_v2, _rebuild_parameter, restore_type_tag); lists and plain objects (an
// argparse.Namespace) too, so that a checkpoint dict holding a state_dict beside its optimizer's
// state and its arguments (torchvision's references) reads.  Nothing is ever called: an object is
// kept as an opaque value.  Any other opcode, or a torch rebuilder not listed, is an error, not a
// guess.  (One machine that reads top to bottom, opcode by opcode: kept whole past 600 lines.)
#include "faster/train/state_dict_pickle.h"

#include <cctype>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "faster/core/error.h"

namespace faster::train {
namespace {

// One pickle value.  Tuples and dicts share their items, so a memoized dict sees later SETITEMS.
struct Value {
  enum Kind {
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kGlobal,
    kTuple,
    kList,
    kDict,
    kTensor,
    kObject
  } kind = kNone;
  int64_t i = 0;
  double f = 0;
  std::string s;  // a string; a global's "module.name"
  std::shared_ptr<std::vector<Value>>
      items;  // a tuple's items; a dict's keys and values, alternating
  torch::Tensor tensor;
};

Value scalar(Value::Kind kind, int64_t i) {
  Value v;
  v.kind = kind;
  v.i = i;
  return v;
}
Value text(Value::Kind kind, std::string s) {
  Value v;
  v.kind = kind;
  v.s = std::move(s);
  return v;
}
Value container(Value::Kind kind, std::vector<Value> items = {}) {
  Value v;
  v.kind = kind;
  v.items = std::make_shared<std::vector<Value>>(std::move(items));
  return v;
}
Value tensor(torch::Tensor t) {
  Value v;
  v.kind = Value::kTensor;
  v.tensor = std::move(t);
  return v;
}

// The element types a storage global names (torch.FloatStorage, ...).
torch::ScalarType storage_dtype(const std::string& global) {
  static const std::map<std::string, torch::ScalarType> types{
      {"torch.FloatStorage", torch::kFloat}, {"torch.DoubleStorage", torch::kDouble},
      {"torch.HalfStorage", torch::kHalf},   {"torch.BFloat16Storage", torch::kBFloat16},
      {"torch.LongStorage", torch::kLong},   {"torch.IntStorage", torch::kInt},
      {"torch.ShortStorage", torch::kShort}, {"torch.CharStorage", torch::kChar},
      {"torch.ByteStorage", torch::kByte},   {"torch.BoolStorage", torch::kBool}};
  const auto it = types.find(global);
  if (it == types.end()) FASTER_THROW("unsupported storage type ", global);
  return it->second;
}

// Python's pickle opcodes (pickletools), those of protocol 2 that the two writers use.
enum Opcode : uint8_t {
  PROTO = 0x80,
  STOP = '.',
  GLOBAL = 'c',
  BINPUT = 'q',
  LONG_BINPUT = 'r',
  BINGET = 'h',
  LONG_BINGET = 'j',
  MARK = '(',
  EMPTY_DICT = '}',
  EMPTY_TUPLE = ')',
  TUPLE = 't',
  TUPLE1 = 0x85,
  TUPLE2 = 0x86,
  TUPLE3 = 0x87,
  NONE = 'N',
  NEWTRUE = 0x88,
  NEWFALSE = 0x89,
  BININT1 = 'K',
  BININT2 = 'M',
  BININT = 'J',
  LONG1 = 0x8a,
  BINFLOAT = 'G',
  BINUNICODE = 'X',
  REDUCE = 'R',
  BUILD = 'b',
  BINPERSID = 'Q',
  SETITEM = 's',
  SETITEMS = 'u',
  EMPTY_LIST = ']',
  LIST = 'l',
  APPEND = 'a',
  APPENDS = 'e',
  NEWOBJ = 0x81,
  SHORT_BINBYTES = 'C',
  BINBYTES = 'B',
  // protocol 4
  SHORT_BINUNICODE = 0x8c,
  BINUNICODE8 = 0x8d,
  NEWOBJ_EX = 0x92,
  STACK_GLOBAL = 0x93,
  MEMOIZE = 0x94,
  FRAME = 0x95,
  EMPTY_SET = 0x8f,
  ADDITEMS = 0x90,
  FROZENSET = 0x91,
  POP = '0',
  POP_MARK = '1',
  DUP = '2',
  LONG4 = 0x8b,
  BINBYTES8 = 0x8e,
  BYTEARRAY8 = 0x96
};

// Whether `cls` ("module.Name") is a model's class: torch.nn's modules, torchvision's and timm's
// models, a script's __main__.Net.  A pickle that instantiates one is a whole model
// (torch.save(model)), and said so; a checkpoint dict's other objects (an argparse.Namespace,
// numpy's scalars) are not.
bool is_model_class(const std::string& cls) {
  for (const char* models : {"torch.nn.", "torchvision.models.", "timm.models.", "__main__."})
    if (cls.rfind(models, 0) == 0) return true;
  return false;
}

// A bound on what a pickle may make, against a hostile file: bytes of strings made (a memoized
// string fetched again and again is copied each time) beyond a multiple of the pickle's size.
constexpr size_t kBytesPerPickleByte = 16, kBaseBytes = size_t{64} << 20;

// `what` ("it pickles a", "its \"model\" is a pickled") the model class `cls`.
std::string whole_model_message(const std::string& what, const std::string& cls) {
  return what + " " + cls +
         " object (torch.save(model) writes the whole model), not a state_dict: save "
         "model.state_dict() instead";
}

// Whether `v` is a dict of name -> tensor (an empty dict is not).
bool is_state_dict(const Value& v) {
  if (v.kind != Value::kDict || v.items->empty() || v.items->size() % 2) return false;
  for (size_t k = 0; k < v.items->size(); k += 2)
    if ((*v.items)[k].kind != Value::kString || (*v.items)[k + 1].kind != Value::kTensor)
      return false;
  return true;
}

class Unpickler {
 public:
  ~Unpickler() {
    stack_.clear();
    memo_.clear();
    for (auto& items : made_containers_) items->clear();
  }
  Unpickler(const Unpickler&) = delete;
  Unpickler& operator=(const Unpickler&) = delete;
  Unpickler(const char* data, size_t size, const StorageLoader& load_storage)
      : p_(data),
        end_(data + size),
        size_(size),
        budget_(kBaseBytes + kBytesPerPickleByte * size),
        load_storage_(load_storage) {}

  Value run() {
    for (;;) {
      const uint8_t op = u8();
      switch (op) {
        case PROTO:
          u8();
          break;
        case STOP:
          return pop();
        case GLOBAL: {
          auto module = line();
          global(module, line());
          break;
        }
        case STACK_GLOBAL: {
          auto name = pop(), module = pop();
          if (module.kind != Value::kString || name.kind != Value::kString)
            fail("STACK_GLOBAL without two strings");
          global(module.s, name.s);
          break;
        }
        case FRAME:  // a length hint for buffered readers
          le(8);
          break;
        case MEMOIZE:
          memo(memo_.size());
          break;
        case BINPUT:
          memo(u8());
          break;
        case LONG_BINPUT:
          memo(le(4));
          break;
        case BINGET:
          push(memo_at(u8()));
          break;
        case LONG_BINGET:
          push(memo_at(le(4)));
          break;
        case MARK:
          marks_.push_back(stack_.size());
          break;
        case EMPTY_DICT:
          push(nest(Value::kDict));
          break;
        case EMPTY_TUPLE:
          push(nest(Value::kTuple));
          break;
        case TUPLE:
          push(nest(Value::kTuple, pop_to_mark()));
          break;
        case TUPLE1:
        case TUPLE2:
        case TUPLE3: {
          const size_t n = op - TUPLE1 + 1;
          if (stack_.size() < n) fail("stack underflow");
          std::vector<Value> items(stack_.end() - n, stack_.end());
          stack_.resize(stack_.size() - n);
          push(nest(Value::kTuple, std::move(items)));
          break;
        }
        case NONE:
          push(Value{});
          break;
        case NEWTRUE:
        case NEWFALSE:
          push(scalar(Value::kBool, op == NEWTRUE));
          break;
        case BININT1:
          push(scalar(Value::kInt, u8()));
          break;
        case BININT2:
          push(scalar(Value::kInt, le(2)));
          break;
        case BININT:
          push(scalar(Value::kInt, static_cast<int32_t>(le(4))));
          break;
        case LONG1: {  // n bytes, little-endian two's complement
          const size_t n = u8();
          if (n > 8) {  // numpy's generator state, 2**70: kept, but not as an integer
            bytes(n);
            push(object(Value{}));
            break;
          }
          uint64_t bits = n ? le(n) : 0;
          if (n && n < 8 && (bits >> (8 * n - 1)) & 1) bits |= ~uint64_t{0} << (8 * n);
          push(scalar(Value::kInt, static_cast<int64_t>(bits)));
          break;
        }
        case BINFLOAT: {  // big-endian double
          uint64_t bits = 0;
          for (const char c : bytes(8)) bits = bits << 8 | static_cast<uint8_t>(c);
          Value v;
          v.kind = Value::kFloat;
          std::memcpy(&v.f, &bits, sizeof v.f);
          push(v);
          break;
        }
        case BINUNICODE:
        case BINBYTES:
          push(text(Value::kString, bytes(le(4))));
          break;
        case SHORT_BINUNICODE:
        case SHORT_BINBYTES:
          push(text(Value::kString, bytes(u8())));
          break;
        case BINUNICODE8:
        case BINBYTES8:
        case BYTEARRAY8:
          push(text(Value::kString, bytes(le(8))));
          break;
        case LONG4:  // an integer of more than 255 bytes: kept, not as an integer
          bytes(le(4));
          push(object(Value{}));
          break;
        case POP:
          pop();
          break;
        case POP_MARK:
          pop_to_mark();
          break;
        case DUP:
          push(top());
          break;
        case EMPTY_LIST:
        case EMPTY_SET:  // a set is kept as a list of its items
          push(nest(Value::kList));
          break;
        case LIST:
        case FROZENSET:
          push(nest(Value::kList, pop_to_mark()));
          break;
        case APPEND: {
          auto item = pop();
          if (top().kind != Value::kList) fail("APPEND on something other than a list");
          add(top(), {std::move(item)});
          break;
        }
        case APPENDS:
        case ADDITEMS: {
          auto items = pop_to_mark();
          if (top().kind != Value::kList) fail("APPENDS on something other than a list");
          add(top(), std::move(items));
          break;
        }
        case NEWOBJ:  // cls, args: an instance, never made here
          pop();
          push(object(pop()));
          break;
        case NEWOBJ_EX:  // cls, args, kwargs
          pop();
          pop();
          push(object(pop()));
          break;
        case REDUCE: {
          auto args = pop(), callable = pop();
          push(call(callable, args));
          break;
        }
        case BUILD: {  // an OrderedDict's attributes (_metadata): not needed; an object's state
          const Value state = pop();
          if (top().kind != Value::kDict && top().kind != Value::kObject)
            fail("BUILD on something other than a dict or an object");
          // An object's attributes (argparse.Namespace's: train.py's "args"), kept to be read.
          if (top().kind == Value::kObject && state.kind == Value::kDict) top().items = state.items;
          break;
        }
        case BINPERSID:
          push(storage(pop()));
          break;
        case SETITEM: {
          auto value = pop(), key = pop();
          if (top().kind != Value::kDict) fail("SETITEM on something other than a dict");
          add(top(), {std::move(key), std::move(value)});
          break;
        }
        case SETITEMS: {
          auto items = pop_to_mark();
          if (items.size() % 2) fail("SETITEMS with an odd count");
          if (top().kind != Value::kDict) fail("SETITEMS on something other than a dict");
          add(top(), std::move(items));
          break;
        }
        default:
          fail("unsupported pickle opcode " + std::to_string(op));
      }
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    if (!object_.empty()) FASTER_THROW(whole_model_message("it pickles a", object_));
    FASTER_THROW(what);
  }

  void global(const std::string& module, const std::string& name) {
    push(text(Value::kGlobal, module + "." + name));
  }
  // An instance of `cls` (of no class named: a wide integer), never made.  A model's class
  // instantiated makes the pickle a whole model
  // (a class named as a value, such as timm's act_layer=torch.nn.ReLU in its arguments, does not).
  Value object(const Value& cls) {
    Value v;
    v.kind = Value::kObject;
    v.s = cls.kind == Value::kGlobal ? cls.s : "";
    if (object_.empty() && is_model_class(v.s)) object_ = v.s;
    return v;
  }

  uint8_t u8() {
    if (p_ == end_) fail("truncated pickle");
    return static_cast<uint8_t>(*p_++);
  }
  uint64_t le(size_t n) {  // n-byte little-endian unsigned
    uint64_t v = 0;
    for (size_t k = 0; k < n; ++k) v |= uint64_t{u8()} << (8 * k);
    return v;
  }
  std::string bytes(size_t n) {
    if (static_cast<size_t>(end_ - p_) < n) fail("truncated pickle");
    std::string s(p_, n);
    p_ += n;
    return s;
  }
  std::string line() {
    const char* nl = static_cast<const char*>(std::memchr(p_, '\n', end_ - p_));
    if (!nl) fail("truncated pickle");
    std::string s(p_, nl);
    p_ = nl + 1;
    return s;
  }

  void push(Value v) {
    spend(v);
    stack_.push_back(std::move(v));
  }
  void spend(const Value& v) {
    made_ += v.s.size();  // the count of values is bounded by the opcodes, their strings are not
    if (made_ > budget_)
      FASTER_THROW("it makes more than ", budget_ >> 20, " MB of strings from ", size_,
                   " bytes (a hostile file?)");
  }
  Value& top() {
    if (stack_.empty()) fail("stack underflow");
    return stack_.back();
  }
  Value pop() {
    Value v = std::move(top());
    stack_.pop_back();
    return v;
  }
  std::vector<Value> pop_to_mark() {
    if (marks_.empty() || marks_.back() > stack_.size()) fail("no MARK");
    std::vector<Value> items(stack_.begin() + marks_.back(), stack_.end());
    stack_.resize(marks_.back());
    marks_.pop_back();
    return items;
  }
  void memo(uint64_t index) {
    spend(top());
    memo_[index] = top();
  }
  const Value& memo_at(uint64_t index) const {
    const auto it = memo_.find(index);
    if (it == memo_.end()) fail("unknown memo entry " + std::to_string(index));
    return it->second;
  }
  // A container holding `items`, kept in `made_containers_` until the unpickler ends.
  Value nest(Value::Kind kind, std::vector<Value> items = {}) {
    Value v = container(kind, std::move(items));
    made_containers_.push_back(v.items);
    return v;
  }
  // Items into a list (appends) or a dict (keys and values).
  void add(Value& to, std::vector<Value> items) {
    to.items->insert(to.items->end(), std::make_move_iterator(items.begin()),
                     std::make_move_iterator(items.end()));
  }

  // The callables those writers name.
  Value call(const Value& callable, const Value& args) {
    if (callable.kind != Value::kGlobal || args.kind != Value::kTuple)
      fail("REDUCE without a global");
    const auto& a = *args.items;
    const auto& name = callable.s;
    if (name == "collections.OrderedDict" && a.empty()) return nest(Value::kDict);
    // (storage, offset, size, stride, requires_grad, backward_hooks[, metadata])
    if (name == "torch._utils._rebuild_tensor_v2" && a.size() >= 4 && a[0].kind == Value::kTensor) {
      const auto sizes = ints(a[2]), strides = ints(a[3]);
      const int64_t offset = integer(a[1]);
      check_view(a[0].tensor.numel(), offset, sizes, strides);
      return tensor(a[0].tensor.as_strided(sizes, strides, offset));
    }
    // (data, requires_grad, backward_hooks): a Parameter saved with keep_vars=True
    if (name == "torch._utils._rebuild_parameter" && !a.empty() && a[0].kind == Value::kTensor)
      return a[0];
    // (value, type): LibTorch's typed containers
    if (name == "torch.jit._pickle.restore_type_tag" && !a.empty()) return a[0];
    // A tensor rebuilder not listed (quantized, sparse...) is not guessed at; anything else
    // (copyreg's reconstructor, a class, torch.device, torch.Size) stands for an object, never
    // made.
    if (name.rfind("torch._utils.", 0) == 0 || name.rfind("torch._tensor", 0) == 0)
      fail("unsupported callable " + name);
    return object(callable);
  }

  // A view (offset, sizes, strides) must lie inside its storage of `numel` elements: LibTorch's own
  // check overflows, and a hostile offset pointed far outside the buffer.
  void check_view(int64_t numel, int64_t offset, const std::vector<int64_t>& sizes,
                  const std::vector<int64_t>& strides) const {
    if (sizes.size() != strides.size() || offset < 0) fail("a tensor view outside its storage");
    int64_t last = offset;
    for (size_t d = 0; d < sizes.size(); ++d) {
      if (sizes[d] < 0 || strides[d] < 0) fail("a tensor view outside its storage");
      if (sizes[d] == 0) return;  // empty: nothing is read
      int64_t span = 0;
      if (__builtin_mul_overflow(sizes[d] - 1, strides[d], &span) ||
          __builtin_add_overflow(last, span, &last))
        fail("a tensor view outside its storage");
    }
    if (last >= numel) fail("a tensor view outside its storage");
  }

  // A persistent id ('storage', storage type, key, location, numel): the storage's tensor on the
  // CPU (where it was saved does not matter here), one per record: keys are names like torch.save's
  // "0", "1", ..., and the archive looks records up by C string and without case, so the cache is
  // keyed by the lowercased name (an alias loaded the same record again and again).
  Value storage(const Value& pid) {
    const auto* a = pid.kind == Value::kTuple ? pid.items.get() : nullptr;
    if (!a || a->size() != 5 || (*a)[0].s != "storage" || (*a)[1].kind != Value::kGlobal ||
        (*a)[2].kind != Value::kString)
      fail("unsupported persistent id");
    const auto& key = (*a)[2].s;
    std::string name;
    for (const char c : key) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') fail("a bad storage name");
      name += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    if (name.empty() || name.size() > 64) fail("a bad storage name");
    auto it = storages_.find(name);
    if (it == storages_.end())
      it = storages_.emplace(name, load_storage_(key, storage_dtype((*a)[1].s), integer((*a)[4])))
               .first;
    return tensor(it->second);
  }

  int64_t integer(const Value& v) const {
    if (v.kind != Value::kInt) fail("expected an integer");
    return v.i;
  }
  std::vector<int64_t> ints(const Value& v) const {
    if (v.kind != Value::kTuple) fail("expected a tuple of integers");
    std::vector<int64_t> out;
    for (const auto& item : *v.items) out.push_back(integer(item));
    return out;
  }

  const char* p_;
  const char* end_;
  size_t size_, budget_, made_ = 0;
  // Every container made.  Freed as one value holding the next, a nest of them recursed once per
  // level (a 2 MB file of nested lists overflowed the stack); ~Unpickler empties each while this
  // still holds them all, so no free recurses, and cycles (a list appended to itself) go too.
  std::vector<std::shared_ptr<std::vector<Value>>> made_containers_;
  const StorageLoader& load_storage_;
  std::vector<Value> stack_;
  std::vector<size_t> marks_;
  std::map<uint64_t, Value> memo_;
  std::map<std::string, torch::Tensor> storages_;
  std::string object_;  // the first model class the pickle instantiates (is_model_class)
};

// A pickled value as JSON, as far as JSON has it: None, numbers, strings, lists and tuples, dicts
// with string keys and objects' attributes; anything else (tensors, classes) null.
nlohmann::json to_json(const Value& v, int depth = 0) {
  if (depth > 8) return nullptr;
  switch (v.kind) {
    case Value::kBool:
      return v.i != 0;
    case Value::kInt:
      return v.i;
    case Value::kFloat:
      return v.f;
    case Value::kString:
      return v.s;
    case Value::kTuple:
    case Value::kList: {
      auto a = nlohmann::json::array();
      for (const auto& item : *v.items) a.push_back(to_json(item, depth + 1));
      return a;
    }
    case Value::kDict:
    case Value::kObject: {
      if (!v.items) return nullptr;
      auto o = nlohmann::json::object();
      for (size_t k = 0; k + 1 < v.items->size(); k += 2)
        if ((*v.items)[k].kind == Value::kString)
          o[(*v.items)[k].s] = to_json((*v.items)[k + 1], depth + 1);
      return o;
    }
    default:
      return nullptr;
  }
}

}  // namespace

c10::Dict<std::string, torch::Tensor> unpickle_state_dict(const char* data, size_t size,
                                                          const StorageLoader& load_storage,
                                                          const std::string& where,
                                                          nlohmann::json* args) {
  Value root;
  Unpickler unpickler(data, size, load_storage);
  try {
    root = unpickler.run();
  } catch (const Error& e) {
    FASTER_THROW(where, ": ", e.what());
  } catch (const c10::Error& e) {  // LibTorch refusing a tensor the pickle describes
    FASTER_THROW(where, ": ", e.what_without_backtrace());
  }
  if (root.kind == Value::kObject && !root.s.empty())
    FASTER_THROW(where, ": ", whole_model_message("it pickles a", root.s));
  if (root.kind != Value::kDict)
    FASTER_THROW(where, ": not a state_dict (the pickle is not a dict)");
  // A checkpoint dict: torchvision's references save {"model": state_dict, "optimizer": ...,
  // "epoch": ..., "args": ...}; others name it "state_dict".
  const Value* dict = &root;
  if (!is_state_dict(root))
    for (const char* name : {"model", "state_dict"})
      for (size_t k = 0; k < root.items->size() && dict == &root; k += 2)
        if ((*root.items)[k].kind == Value::kString && (*root.items)[k].s == name &&
            is_state_dict((*root.items)[k + 1]))
          dict = &(*root.items)[k + 1];
  if (!is_state_dict(*dict)) {
    // {"model": <a pickled module>, ...}: the model itself where its state_dict belongs.
    for (size_t k = 0; k + 1 < root.items->size(); k += 2) {
      const auto &key = (*root.items)[k], &value = (*root.items)[k + 1];
      if (key.kind == Value::kString && value.kind == Value::kObject && is_model_class(value.s))
        FASTER_THROW(where, ": ",
                     whole_model_message("its \"" + key.s + "\" is a pickled", value.s));
    }
    std::vector<std::string> keys;
    for (size_t k = 0; k < root.items->size(); k += 2)
      if ((*root.items)[k].kind == Value::kString) keys.push_back((*root.items)[k].s);
    std::string named;
    for (size_t k = 0; k < keys.size() && k < 6; ++k) named += (k ? ", " : "") + keys[k];
    if (keys.size() > 6) named += ", ...";
    FASTER_THROW(where, ": not a state_dict (",
                 keys.empty() ? std::string("a dict of no named entries")
                              : "a dict of " + named + ", none of them name -> tensor",
                 "; a checkpoint dict is read where its \"model\" or \"state_dict\" is one)");
  }
  if (args && dict != &root)
    for (size_t k = 0; k + 1 < root.items->size(); k += 2)
      if ((*root.items)[k].kind == Value::kString && (*root.items)[k].s == "args")
        *args = to_json((*root.items)[k + 1]);
  c10::Dict<std::string, torch::Tensor> out;
  const auto& items = *dict->items;
  for (size_t k = 0; k < items.size(); k += 2)
    out.insert_or_assign(items[k].s, items[k + 1].tensor);
  return out;
}

}  // namespace faster::train
