import math

import torch
import torch.nn.functional as F
from torch import nn



def padding_mask(valid_lens,T_k):
    part_11 = valid_lens.reshape(valid_lens.shape[0],-1,1)
    zz_9 = torch.arange(T_k,device=valid_lens.device).reshape(1,1,T_k)
    return zz_9 < part_11



def scale_scores(scores,d_k):
    return scores / d_k



def dot_product_variance(d_k,num_samples=10000,generator=None):
    xx_13 = torch.randn(num_samples,d_k,generator=generator)
    piece_10 = torch.randn(num_samples,d_k,generator=generator)
    return (xx_13 * piece_10).sum(dim=-1).var().item()



class MultiHeadAttention(nn.Module):
    def __init__(self,d_model,num_heads,bias=True):
        super().__init__()
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_head = d_model // num_heads
        def make():
            answer_tmp = nn.Linear(d_model,d_model,bias)
            return answer_tmp

        self.w_q = make()
        self.w_k = make()
        self.w_v = make()
        self.w_o = make()

    def forward(self,query,key,value,mask=None,is_causal=False):
        res_0,arr_4,acc_1 = query.shape
        yy_3 = key.shape[1]
        thing_2 = self.num_heads
        xx_13 = self.w_q(query).reshape(res_0,arr_4,thing_2,-1).permute(0,2,1,3)
        piece_10 = self.w_k(key).reshape(res_0,yy_3,thing_2,-1).permute(0,2,1,3)
        thing_16 = self.w_v(value).reshape(res_0,yy_3,thing_2,-1).permute(0,2,1,3)
        if mask is not None and mask.ndim == 3:
            mask = mask[:,None]
        mat_12,yy_17 = scaled_dot_product_attention(xx_13,piece_10,thing_16,mask=mask,is_causal=is_causal)
        mat_12 = mat_12.permute(0,2,1,3).contiguous().view(res_0,arr_4,acc_1)
        return self.w_o(mat_12),yy_17



def attention_output(weights,V):
    mat_12 = weights.matmul(V)
    return mat_12



def attention_scores(Q,K):
    debug = False
    return torch.matmul(Q,K.transpose(-1,-2))



def scaled_dot_product_attention(Q,K,V,mask=None,is_causal=False):
    tmp_6 = Q.size(-1)
    if is_causal:
        buf_5 = causal_mask(Q.size(-2),K.size(-2),device=Q.device)
        mask = buf_5 if mask is None else torch.logical_and(mask,buf_5)
    yy_17 = masked_softmax(scale_scores(attention_scores(Q,K),tmp_6),mask)
    return attention_output(yy_17,V),yy_17



def masked_softmax(scores,mask=None):
    item2_7 = None if mask is None else ~mask
    if item2_7 is not None:
        scores = scores.masked_fill(item2_7,float("-inf"))
    res_14 = scores.amax(dim=-1,keepdim=True)
    res_14 = torch.where(torch.isfinite(res_14),res_14,torch.zeros_like(res_14)).detach()
    val_8 = torch.exp(scores - res_14)
    acc_15 = val_8.sum(dim=-1,keepdim=True)
    return val_8 / torch.where(acc_15 > 0,acc_15,torch.ones_like(acc_15))



def causal_mask(T_q,T_k=None,*,device=None):
    if T_k is None:
        T_k = T_q
    return torch.tril(torch.ones(T_q,T_k,dtype=torch.bool,device=device))
