// Shared helpers for the netmodel tests: temporary files and a small strict JSON parser.
#pragma once
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace nmt {

// A fresh directory under TMPDIR (or /tmp), removed with its files at destruction.
struct TempDir {
    std::string path;
    std::vector<std::string> files;
    TempDir()
    {
        const char *base = std::getenv("TMPDIR");
        std::string tmpl = std::string(base && *base ? base : "/tmp") + "/nmtest.XXXXXX";
        std::vector<char> buf(tmpl.begin(), tmpl.end());
        buf.push_back('\0');
        if (!mkdtemp(buf.data())) std::abort();
        path = buf.data();
    }
    ~TempDir()
    {
        for (auto &f : files) unlink(f.c_str());
        rmdir(path.c_str());
    }
    std::string write(const std::string &name, const std::string &content)
    {
        std::string p = path + "/" + name;
        std::ofstream o(p, std::ios::binary);
        o << content;
        files.push_back(p);
        return p;
    }
};

// Strict JSON value (RFC 8259 subset sufficient for checking our writer's output).
struct Json {
    enum Kind { Null, Bool, Num, Str, Arr, Obj } kind = Null;
    double num = 0;
    bool b = false;
    std::string str;
    std::vector<Json> arr;
    std::vector<std::pair<std::string, Json>> obj;
    const Json *get(const std::string &k) const
    {
        for (auto &kv : obj)
            if (kv.first == k) return &kv.second;
        return nullptr;
    }
};

class JsonParser {
public:
    explicit JsonParser(const std::string &s) : s_(s) {}
    bool parse(Json &out)
    {
        ws();
        if (!value(out, 0)) return false;
        ws();
        return i_ == s_.size();
    }

private:
    const std::string &s_;
    size_t i_ = 0;
    void ws()
    {
        while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r')) i_++;
    }
    bool lit(const char *w)
    {
        size_t n = std::string(w).size();
        if (s_.compare(i_, n, w) != 0) return false;
        i_ += n;
        return true;
    }
    bool string(std::string &out)
    {
        if (i_ >= s_.size() || s_[i_] != '"') return false;
        i_++;
        while (i_ < s_.size()) {
            unsigned char c = (unsigned char)s_[i_++];
            if (c == '"') return true;
            if (c < 0x20) return false;
            if (c == '\\') {
                if (i_ >= s_.size()) return false;
                char e = s_[i_++];
                if (e == 'u') {
                    if (i_ + 4 > s_.size()) return false;
                    for (int k = 0; k < 4; k++)
                        if (!isxdigit((unsigned char)s_[i_ + k])) return false;
                    out += '?';
                    i_ += 4;
                } else if (std::string("\"\\/bfnrt").find(e) != std::string::npos) {
                    out += e;
                } else {
                    return false;
                }
            } else {
                out += (char)c;
            }
        }
        return false;
    }
    bool number(double &out)
    {
        size_t st = i_;
        if (i_ < s_.size() && s_[i_] == '-') i_++;
        if (i_ >= s_.size() || !isdigit((unsigned char)s_[i_])) return false;
        if (s_[i_] == '0') i_++;
        else while (i_ < s_.size() && isdigit((unsigned char)s_[i_])) i_++;
        if (i_ < s_.size() && s_[i_] == '.') {
            i_++;
            if (i_ >= s_.size() || !isdigit((unsigned char)s_[i_])) return false;
            while (i_ < s_.size() && isdigit((unsigned char)s_[i_])) i_++;
        }
        if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
            i_++;
            if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) i_++;
            if (i_ >= s_.size() || !isdigit((unsigned char)s_[i_])) return false;
            while (i_ < s_.size() && isdigit((unsigned char)s_[i_])) i_++;
        }
        out = std::strtod(s_.substr(st, i_ - st).c_str(), nullptr);
        return true;
    }
    bool value(Json &v, int depth)
    {
        if (depth > 64 || i_ >= s_.size()) return false;
        char c = s_[i_];
        if (c == '{') {
            v.kind = Json::Obj;
            i_++;
            ws();
            if (i_ < s_.size() && s_[i_] == '}') { i_++; return true; }
            while (true) {
                ws();
                std::string k;
                if (!string(k)) return false;
                ws();
                if (i_ >= s_.size() || s_[i_] != ':') return false;
                i_++;
                ws();
                Json child;
                if (!value(child, depth + 1)) return false;
                v.obj.emplace_back(k, child);
                ws();
                if (i_ < s_.size() && s_[i_] == ',') { i_++; continue; }
                if (i_ < s_.size() && s_[i_] == '}') { i_++; return true; }
                return false;
            }
        }
        if (c == '[') {
            v.kind = Json::Arr;
            i_++;
            ws();
            if (i_ < s_.size() && s_[i_] == ']') { i_++; return true; }
            while (true) {
                ws();
                Json child;
                if (!value(child, depth + 1)) return false;
                v.arr.push_back(child);
                ws();
                if (i_ < s_.size() && s_[i_] == ',') { i_++; continue; }
                if (i_ < s_.size() && s_[i_] == ']') { i_++; return true; }
                return false;
            }
        }
        if (c == '"') { v.kind = Json::Str; return string(v.str); }
        if (lit("true")) { v.kind = Json::Bool; v.b = true; return true; }
        if (lit("false")) { v.kind = Json::Bool; return true; }
        if (lit("null")) { v.kind = Json::Null; return true; }
        v.kind = Json::Num;
        return number(v.num);
    }
};

inline std::string read_file(const std::string &p)
{
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

}  // namespace nmt
