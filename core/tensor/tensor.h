// A dense, contiguous, row-major tensor on one device. Storage is reference counted and comes
// from a tracked Allocator under a memory category; views share storage. This is a container,
// not an autograd object: kernels take raw pointers and shapes (see core/kernels/).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor/allocator.h"
#include "core/tensor/dtype.h"

namespace parascope {

using Shape = std::vector<std::int64_t>;

std::int64_t shapeNumel(const Shape& shape);
std::string shapeString(const Shape& shape);  // "[2, 3]"

class Storage {
 public:
  Storage(std::size_t bytes, MemoryCategory category, Allocator& allocator);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  MemoryCategory category() const { return category_; }
  Allocator& allocator() const { return *allocator_; }

 private:
  Allocator* allocator_;
  void* data_;
  std::size_t bytes_;
  MemoryCategory category_;
};

class Tensor {
 public:
  Tensor() = default;

  // Uninitialised contents.
  static Tensor empty(const Shape& shape, DType dtype, MemoryCategory category,
                      Allocator& allocator = defaultAllocator());
  static Tensor zeros(const Shape& shape, DType dtype, MemoryCategory category,
                      Allocator& allocator = defaultAllocator());

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  std::int64_t dim(int i) const { return shape_.at(static_cast<std::size_t>(i)); }
  int rank() const { return static_cast<int>(shape_.size()); }
  std::int64_t numel() const { return numel_; }
  DType dtype() const { return dtype_; }
  std::size_t nbytes() const { return static_cast<std::size_t>(numel_) * dtypeSize(dtype_); }
  MemoryCategory category() const { return storage_->category(); }
  Device device() const { return storage_->allocator().device(); }

  void* raw() const { return static_cast<char*>(storage_->data()) + offsetBytes_; }
  // Typed access; T must match the dtype's element size (uint16_t for bf16/f16).
  template <typename T>
  T* data() const {
    checkElement(sizeof(T));
    return static_cast<T*>(raw());
  }

  // Same storage, new shape with the same number of elements.
  Tensor view(const Shape& shape) const;
  // Elements [begin, begin + count) of the flattened tensor, as a 1-D view.
  Tensor slice(std::int64_t begin, std::int64_t count) const;
  void zero() const;
  void copyFrom(const Tensor& other) const;  // same dtype and numel
  // Where the host can read it: this tensor in host memory, else a copy there (Workspace, the
  // default allocator) of a device's.
  Tensor onHost() const;

 private:
  void checkElement(std::size_t size) const;

  std::shared_ptr<Storage> storage_;
  Shape shape_;
  std::int64_t numel_ = 0;
  std::size_t offsetBytes_ = 0;
  DType dtype_ = DType::F32;
};

}  // namespace parascope
