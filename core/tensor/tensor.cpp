#include "core/tensor/tensor.h"

#include <cstring>
#include <stdexcept>

#include "core/common/checked_math.h"

namespace parascope {

std::int64_t shapeNumel(const Shape& shape) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) {
    if (d < 0) throw std::invalid_argument("negative dimension in shape " + shapeString(shape));
    const std::optional<std::int64_t> product = checkedMul(n, d);
    if (!product)
      throw std::length_error("shape " + shapeString(shape) + " has more than 2^63 elements");
    n = *product;
  }
  return n;
}

std::string shapeString(const Shape& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

Storage::Storage(std::size_t bytes, MemoryCategory category, Allocator& allocator)
    : allocator_(&allocator),
      data_(allocator.allocate(bytes, category)),
      bytes_(bytes),
      category_(category) {}

Storage::~Storage() {
  allocator_->deallocate(data_, bytes_, category_);
}

Tensor Tensor::empty(const Shape& shape, DType dtype, MemoryCategory category,
                     Allocator& allocator) {
  Tensor t;
  t.shape_ = shape;
  t.numel_ = shapeNumel(shape);
  t.dtype_ = dtype;
  t.storage_ = std::make_shared<Storage>(static_cast<std::size_t>(t.numel_) * dtypeSize(dtype),
                                         category, allocator);
  return t;
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, MemoryCategory category,
                     Allocator& allocator) {
  Tensor t = empty(shape, dtype, category, allocator);
  t.zero();
  return t;
}

Tensor Tensor::view(const Shape& shape) const {
  if (shapeNumel(shape) != numel_) {
    throw std::invalid_argument("cannot view a tensor of shape " + shapeString(shape_) + " as " +
                                shapeString(shape));
  }
  Tensor t = *this;
  t.shape_ = shape;
  return t;
}

Tensor Tensor::slice(std::int64_t begin, std::int64_t count) const {
  if (begin < 0 || count < 0 || begin + count > numel_) {
    throw std::out_of_range("slice [" + std::to_string(begin) + ", " +
                            std::to_string(begin + count) + ") of a tensor with " +
                            std::to_string(numel_) + " elements");
  }
  Tensor t = *this;
  t.shape_ = {count};
  t.numel_ = count;
  t.offsetBytes_ += static_cast<std::size_t>(begin) * dtypeSize(dtype_);
  return t;
}

void Tensor::zero() const {
  if (numel_ > 0) storage_->allocator().zero(raw(), nbytes());
}

Tensor Tensor::onHost() const {
  if (device().kind == Device::Kind::Cpu) return *this;
  Tensor host = empty(shape_, dtype_, MemoryCategory::Workspace);
  host.copyFrom(*this);
  return host;
}

void Tensor::copyFrom(const Tensor& other) const {
  if (other.dtype_ != dtype_ || other.numel_ != numel_) {
    throw std::invalid_argument("copy from " + shapeString(other.shape_) + " " +
                                std::string(dtypeName(other.dtype_)) + " into " +
                                shapeString(shape_) + " " + std::string(dtypeName(dtype_)));
  }
  // A device's memory copies itself, from the host or a device; host memory copies from the
  // host, or is copied into by the device the source is on.
  if (numel_ == 0) return;
  if (device().kind != Device::Kind::Cpu) {
    storage_->allocator().copy(raw(), other.raw(), nbytes());
  } else {
    other.storage_->allocator().copy(raw(), other.raw(), nbytes());
  }
}

void Tensor::checkElement(std::size_t size) const {
  if (size != dtypeSize(dtype_)) {
    throw std::logic_error("typed access of " + std::to_string(size) + "-byte elements to a " +
                           std::string(dtypeName(dtype_)) + " tensor");
  }
}

}  // namespace parascope
