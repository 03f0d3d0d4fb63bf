// IDX reader and data set helpers: the real Debian Fashion-MNIST files, and corrupt files made
// here (plain and gzip) that must fail with a clear message instead of crashing.
#include <gtest/gtest.h>

#include <unistd.h>
#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "predrop/ddl/train/dataset.hpp"
#include "predrop/ddl/train/idx.hpp"

namespace fs = std::filesystem;
using predrop::ddl::train::IdxImages;
using Bytes = std::vector<std::uint8_t>;

namespace {

const fs::path kDir{predrop::ddl::train::kFashionMnistDir};

bool have_dataset() {
  return fs::exists(kDir / "t10k-labels-idx1-ubyte.gz");
}

void put32(Bytes& b, std::uint32_t v) {
  for (int s = 24; s >= 0; s -= 8)
    b.push_back(static_cast<std::uint8_t>(v >> s));
}
void put32le(Bytes& b, std::uint32_t v) {
  for (int s = 0; s < 32; s += 8)
    b.push_back(static_cast<std::uint8_t>(v >> s));
}

// A plain IDX image file of `count` images of rows x cols, pixel k = k % 256.
Bytes images_file(std::uint32_t count, std::uint32_t rows, std::uint32_t cols) {
  Bytes b;
  put32(b, 0x00000803);
  put32(b, count);
  put32(b, rows);
  put32(b, cols);
  for (std::size_t k = 0; k < std::size_t{count} * rows * cols; ++k) {
    b.push_back(static_cast<std::uint8_t>(k % 256));
  }
  return b;
}

Bytes labels_file(const Bytes& labels) {
  Bytes b;
  put32(b, 0x00000801);
  put32(b, static_cast<std::uint32_t>(labels.size()));
  b.insert(b.end(), labels.begin(), labels.end());
  return b;
}

std::uint32_t crc32(const Bytes& data) {
  std::uint32_t c = 0xffffffffu;
  for (const std::uint8_t byte : data) {
    c ^= byte;
    for (int k = 0; k < 8; ++k)
      c = (c & 1) ? (c >> 1) ^ 0xedb88320u : c >> 1;
  }
  return ~c;
}

// One gzip member (RFC 1952) holding `data` in deflate stored blocks (RFC 1951 §3.2.4), so the
// test can make gzip files without linking zlib itself.
Bytes gzip_stored(const Bytes& data) {
  Bytes b = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff};
  std::size_t pos = 0;
  do {
    const std::size_t n = std::min<std::size_t>(data.size() - pos, 65535);
    const bool final = pos + n == data.size();
    b.push_back(final ? 1 : 0);
    b.push_back(static_cast<std::uint8_t>(n));
    b.push_back(static_cast<std::uint8_t>(n >> 8));
    b.push_back(static_cast<std::uint8_t>(~n));
    b.push_back(static_cast<std::uint8_t>(~n >> 8));
    b.insert(b.end(), data.begin() + static_cast<std::ptrdiff_t>(pos),
             data.begin() + static_cast<std::ptrdiff_t>(pos + n));
    pos += n;
  } while (pos < data.size());
  put32le(b, crc32(data));
  put32le(b, static_cast<std::uint32_t>(data.size()));
  return b;
}

Bytes read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() /
            ("predrop_idx_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  fs::path write(const std::string& name, const Bytes& b) const {
    const fs::path p = path_ / name;
    std::ofstream(p, std::ios::binary)
        .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
    return p;
  }

 private:
  fs::path path_;
};

// The error of loading `bytes` as an image file on disk.
std::string image_error(const TempDir& dir, const std::string& name, const Bytes& bytes) {
  const fs::path p = dir.write(name, bytes);
  auto r = predrop::ddl::train::load_idx_images(p);
  EXPECT_FALSE(r.ok()) << name << " should not parse";
  return r.ok() ? std::string() : r.error().message;
}

}  // namespace

TEST(IdxRealFiles, FashionMnistHas60000And10000SamplesWithLabelsInRange) {
  if (!have_dataset()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  auto r = predrop::ddl::train::load_fashion_mnist();
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto& d = r.value();
  ASSERT_EQ(d.train.size(), 60000u);
  ASSERT_EQ(d.test.size(), 10000u);
  EXPECT_EQ(d.train.features, 784u);
  EXPECT_EQ(d.train.pixels.size(), 60000u * 784u);
  EXPECT_EQ(d.test.pixels.size(), 10000u * 784u);
  // Fashion-MNIST is balanced: 6000 training and 1000 test images per class (arXiv 1708.07747).
  std::array<int, 10> train_hist{}, test_hist{};
  for (auto l : d.train.labels)
    ++train_hist.at(l);
  for (auto l : d.test.labels)
    ++test_hist.at(l);
  for (int c = 0; c < 10; ++c) {
    EXPECT_EQ(train_hist[c], 6000) << "class " << c;
    EXPECT_EQ(test_hist[c], 1000) << "class " << c;
  }
  const auto [mn, mx] = std::minmax_element(d.train.pixels.begin(), d.train.pixels.end());
  EXPECT_EQ(*mn, 0.0f);
  EXPECT_EQ(*mx, 1.0f);
}

TEST(IdxRealFiles, LabelsParseFromMemoryLikeFromDisk) {
  if (!have_dataset()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  const fs::path p = kDir / "t10k-labels-idx1-ubyte.gz";
  const Bytes gz = read_all(p);
  auto mem = predrop::ddl::train::parse_idx_labels(gz, "mem");
  auto disk = predrop::ddl::train::load_idx_labels(p);
  ASSERT_TRUE(mem.ok() && disk.ok());
  EXPECT_EQ(mem->labels, disk->labels);
  EXPECT_EQ(mem->labels.size(), 10000u);
}

TEST(IdxParse, PlainImagesBecomeFloatsInUnitRange) {
  auto r = predrop::ddl::train::parse_idx_images(images_file(3, 2, 2), "three");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->count, 3u);
  EXPECT_EQ(r->rows, 2u);
  EXPECT_EQ(r->cols, 2u);
  ASSERT_EQ(r->pixels.size(), 12u);
  for (std::size_t k = 0; k < 12; ++k)
    EXPECT_EQ(r->pixels[k], static_cast<float>(k) / 255.0f);
}

TEST(IdxParse, GzipSingleAndMultiMemberMatchPlain) {
  const Bytes plain = images_file(5, 28, 28);
  auto a = predrop::ddl::train::parse_idx_images(plain, "plain");
  auto b = predrop::ddl::train::parse_idx_images(gzip_stored(plain), "gz");
  // RFC 1952 §2.2: a gzip file may be several members; the data is their concatenation.
  const Bytes first(plain.begin(), plain.begin() + 1000), second(plain.begin() + 1000, plain.end());
  Bytes two = gzip_stored(first);
  const Bytes m2 = gzip_stored(second);
  two.insert(two.end(), m2.begin(), m2.end());
  auto c = predrop::ddl::train::parse_idx_images(two, "two members");
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(a->pixels, b->pixels);
  EXPECT_EQ(a->pixels, c->pixels);
}

TEST(IdxCorrupt, BadMagic) {
  TempDir dir;
  const std::string e = image_error(dir, "labels_as_images", labels_file({1, 2, 3}));
  EXPECT_NE(e.find("bad magic 0x00000801, expected 0x00000803"), std::string::npos) << e;
  EXPECT_NE(e.find("labels_as_images"), std::string::npos) << e;
}

TEST(IdxCorrupt, TruncatedHeader) {
  TempDir dir;
  Bytes b = images_file(1, 2, 2);
  b.resize(10);
  const std::string e = image_error(dir, "short_header", b);
  EXPECT_NE(e.find("truncated header: expected 16 bytes, got 10"), std::string::npos) << e;
  const std::string e2 = image_error(dir, "three_bytes", Bytes{0, 0, 8});
  EXPECT_NE(e2.find("truncated header: expected 4 bytes of magic, got 3"), std::string::npos) << e2;
}

TEST(IdxCorrupt, TruncatedDataNamesFileAndSizes) {
  TempDir dir;
  Bytes b = images_file(3, 2, 2);
  b.pop_back();
  const fs::path p = dir.write("cut", b);
  auto r = predrop::ddl::train::load_idx_images(p);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(
      r.error().message,
      "file " + p.string() + ": truncated: expected 12 bytes of pixel data (3 x 2 x 2), got 11");
}

TEST(IdxCorrupt, TruncatedDataInsideGzip) {
  TempDir dir;
  Bytes b = images_file(3, 28, 28);
  b.resize(b.size() - 100);
  const std::string e = image_error(dir, "cut.gz", gzip_stored(b));
  EXPECT_NE(e.find("truncated: expected 2352 bytes of pixel data"), std::string::npos) << e;
}

TEST(IdxCorrupt, TrailingData) {
  TempDir dir;
  Bytes b = images_file(1, 2, 2);
  b.push_back(7);
  const std::string e = image_error(dir, "long", b);
  EXPECT_NE(e.find("trailing data: expected 4 bytes of pixel data, got 5 (1 extra)"),
            std::string::npos)
      << e;
}

TEST(IdxCorrupt, WrongDims) {
  TempDir dir;
  const std::string zero = image_error(dir, "zero_rows", images_file(2, 0, 28));
  EXPECT_NE(zero.find("wrong dims: dimension 1 is 0"), std::string::npos) << zero;
  // Sizes whose product overflows 64 bits must neither wrap nor allocate.
  Bytes huge;
  put32(huge, 0x00000803);
  for (int i = 0; i < 3; ++i)
    put32(huge, 0xffffffffu);
  huge.resize(huge.size() + 64, 0);
  const std::string e = image_error(dir, "huge", huge);
  EXPECT_NE(e.find("truncated: expected more than 2^64 bytes"), std::string::npos) << e;
  // Large but representable: 60000 x 28 x 28 announced, 16 bytes present.
  Bytes big;
  put32(big, 0x00000803);
  put32(big, 60000);
  put32(big, 28);
  put32(big, 28);
  big.resize(big.size() + 16, 0);
  const std::string e2 = image_error(dir, "big", big);
  EXPECT_NE(e2.find("truncated: expected 47040000 bytes of pixel data (60000 x 28 x 28), got 16"),
            std::string::npos)
      << e2;
}

TEST(IdxCorrupt, ImageFileWithOtherDimensionCountIsBadMagic) {
  TempDir dir;
  Bytes b;
  put32(b, 0x00000802);
  put32(b, 2);
  put32(b, 2);
  b.insert(b.end(), 4, 0);
  const std::string e = image_error(dir, "two_dims", b);
  EXPECT_NE(e.find("this IDX file has 2 dimensions"), std::string::npos) << e;
}

TEST(IdxCorrupt, EmptyFile) {
  TempDir dir;
  EXPECT_NE(image_error(dir, "empty", {}).find(": empty file"), std::string::npos);
  const fs::path p = dir.write("empty_labels", {});
  auto r = predrop::ddl::train::load_idx_labels(p);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("empty file"), std::string::npos);
}

TEST(IdxCorrupt, GarbageThatIsNotGzip) {
  TempDir dir;
  Bytes g;
  for (int i = 0; i < 1000; ++i)
    g.push_back(static_cast<std::uint8_t>(i * 37 + 11));
  const std::string e = image_error(dir, "garbage", g);
  EXPECT_NE(e.find("bad magic"), std::string::npos) << e;
}

TEST(IdxCorrupt, GarbageBehindGzipMagic) {
  TempDir dir;
  Bytes g = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff};
  for (int i = 0; i < 200; ++i)
    g.push_back(static_cast<std::uint8_t>(0xff - i));
  const std::string e = image_error(dir, "bad.gz", g);
  EXPECT_NE(e.find("gzip: corrupt data"), std::string::npos) << e;
}

TEST(IdxCorrupt, TruncatedGzipStream) {
  TempDir dir;
  const Bytes gz = gzip_stored(images_file(2, 28, 28));
  const std::string e = image_error(dir, "cut.gz", Bytes(gz.begin(), gz.begin() + 300));
  EXPECT_NE(e.find("gzip: truncated stream"), std::string::npos) << e;
  // Cut inside the 8-byte trailer (CRC-32, ISIZE) too.
  const std::string e2 = image_error(dir, "no_trailer.gz", Bytes(gz.begin(), gz.end() - 3));
  EXPECT_NE(e2.find("gzip: truncated stream"), std::string::npos) << e2;
}

TEST(IdxCorrupt, GzipChecksumMismatch) {
  TempDir dir;
  Bytes gz = gzip_stored(images_file(1, 2, 2));
  gz[gz.size() - 8] ^= 0x01;  // CRC-32
  const std::string e = image_error(dir, "crc.gz", gz);
  EXPECT_NE(e.find("gzip: corrupt data: incorrect data check"), std::string::npos) << e;
}

TEST(IdxCorrupt, TrailingGarbageAfterGzip) {
  TempDir dir;
  Bytes gz = gzip_stored(images_file(1, 2, 2));
  gz.push_back(0);
  gz.push_back(1);
  const std::string e = image_error(dir, "tail.gz", gz);
  EXPECT_NE(e.find("2 bytes of trailing garbage"), std::string::npos) << e;
}

TEST(IdxCorrupt, DecompressionIsCapped) {
  const Bytes plain = images_file(10, 28, 28);  // 7856 bytes
  auto r = predrop::ddl::train::parse_idx_images(gzip_stored(plain), "bomb", 4096);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("exceeds the limit of 4096 bytes"), std::string::npos)
      << r.error().message;
  EXPECT_TRUE(
      predrop::ddl::train::parse_idx_images(gzip_stored(plain), "exact", plain.size()).ok());
}

TEST(IdxCorrupt, MissingFile) {
  auto r = predrop::ddl::train::load_idx_images("/nonexistent/predrop/images.gz");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "file /nonexistent/predrop/images.gz: cannot open: No such file or directory");
}

TEST(Dataset, CountMismatchAndLabelRange) {
  auto img = predrop::ddl::train::parse_idx_images(images_file(3, 2, 2), "i");
  auto two = predrop::ddl::train::parse_idx_labels(labels_file({1, 2}), "l");
  ASSERT_TRUE(img.ok() && two.ok());
  auto r = predrop::ddl::train::make_dataset(img.value(), two.value(), "x", 10);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("3 images but 2 labels"), std::string::npos);
  auto bad = predrop::ddl::train::parse_idx_labels(labels_file({1, 10, 2}), "l");
  auto r2 = predrop::ddl::train::make_dataset(img.value(), bad.value(), "x", 10);
  ASSERT_FALSE(r2.ok());
  EXPECT_NE(r2.error().message.find("label 10 of sample 1 is not below 10"), std::string::npos);
  auto good = predrop::ddl::train::parse_idx_labels(labels_file({1, 9, 2}), "l");
  auto r3 = predrop::ddl::train::make_dataset(img.value(), good.value(), "x", 10);
  ASSERT_TRUE(r3.ok());
  EXPECT_EQ(r3->features, 4u);
  EXPECT_EQ(r3->sample(1)[0], 4.0f / 255.0f);
}

TEST(Dataset, ShardsPartitionTheIndices) {
  for (auto mode :
       {predrop::ddl::train::ShardMode::kStrided, predrop::ddl::train::ShardMode::kContiguous}) {
    std::vector<int> seen(103, 0);
    std::size_t smallest = 1000, largest = 0;
    for (std::uint32_t w = 0; w < 4; ++w) {
      const auto s = predrop::ddl::train::shard_indices(103, w, 4, mode);
      smallest = std::min(smallest, s.size());
      largest = std::max(largest, s.size());
      for (auto i : s)
        ++seen.at(i);
    }
    EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
    EXPECT_LE(largest - smallest, 1u);
  }
  EXPECT_EQ(predrop::ddl::train::shard_indices(10, 1, 3, predrop::ddl::train::ShardMode::kStrided),
            (std::vector<std::uint32_t>{1, 4, 7}));
  EXPECT_EQ(
      predrop::ddl::train::shard_indices(10, 1, 3, predrop::ddl::train::ShardMode::kContiguous),
      (std::vector<std::uint32_t>{3, 4, 5}));
}

TEST(Dataset, BatchSamplerIsSeededAndCoversEachEpoch) {
  std::vector<std::uint32_t> idx(20);
  for (std::uint32_t i = 0; i < 20; ++i)
    idx[i] = 100 + i;
  predrop::ddl::train::BatchSampler a(idx, 5, 42), b(idx, 5, 42), c(idx, 5, 43);
  std::multiset<std::uint32_t> epoch0;
  bool differs = false;
  for (int k = 0; k < 4; ++k) {
    const auto x = a.next();
    const auto y = b.next();
    const auto z = c.next();
    ASSERT_EQ(x.size(), 5u);
    EXPECT_TRUE(std::equal(x.begin(), x.end(), y.begin()));
    differs |= !std::equal(x.begin(), x.end(), z.begin());
    epoch0.insert(x.begin(), x.end());
  }
  EXPECT_TRUE(differs);
  EXPECT_EQ(epoch0, std::multiset<std::uint32_t>(idx.begin(), idx.end()));
  EXPECT_EQ(a.epoch(), 0u);
  a.next();
  EXPECT_EQ(a.epoch(), 1u);
}
