// The one exception type of the implementation; capi/ turns it into a deconv_status and message.
#pragma once

#include <stdexcept>
#include <string>

namespace libdeconv {

enum class Status { ok = 0, invalid_argument = 1, unsupported = 2, out_of_memory = 3, internal_error = 4 };

class Error : public std::runtime_error {
public:
    Error(Status status, const std::string &message) : std::runtime_error(message), status_(status) {}
    Status status() const { return status_; }

private:
    Status status_;
};

[[noreturn]] inline void fail_invalid(const std::string &message) {
    throw Error(Status::invalid_argument, message);
}

} // namespace libdeconv
